import { gql } from "@urql/vue";
import type { User, Viewer } from "./types";

const USER_FIELDS = `
  id email name role emailVerified twoStepEnabled
  account { id name currency kind status trialPolicy { expiresAt quota } }
`;

export const MeQuery = gql<{ me: Viewer | null }, Record<string, never>>`
  query Me { me { via recoveryCodesLeft user { ${USER_FIELDS} } } }
`;

export const LoginMutation = gql<
  { login: { secondStepRequired: boolean; user: User | null } },
  { email: string; password: string }
>`
  mutation Login($email: String!, $password: String!) {
    login(email: $email, password: $password) { secondStepRequired user { ${USER_FIELDS} } }
  }
`;

export const VerifySecondStepMutation = gql<{ verifySecondStep: User }, { code: string }>`
  mutation VerifySecondStep($code: String!) { verifySecondStep(code: $code) { ${USER_FIELDS} } }
`;

export const LogoutMutation = gql<{ logout: boolean }, Record<string, never>>`
  mutation Logout {
    logout
  }
`;

/** Operations that answer UNAUTHENTICATED as part of signing in (a wrong password), not because a session expired. */
export const SIGN_IN_OPERATIONS = new Set(["Me", "Login", "VerifySecondStep", "Logout"]);
