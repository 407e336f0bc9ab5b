import { gql } from "@urql/vue";
import type { User } from "./types";

export const ChangePasswordMutation = gql<
  { changePassword: boolean },
  { currentPassword: string; newPassword: string; code: string | null }
>`
  mutation ChangePassword($currentPassword: String!, $newPassword: String!, $code: String) {
    changePassword(currentPassword: $currentPassword, newPassword: $newPassword, code: $code)
  }
`;

export const RequestEmailVerificationMutation = gql<
  { requestEmailVerification: { email: string; expiresAt: string } },
  { email: string | null }
>`
  mutation RequestEmailVerification($email: String) {
    requestEmailVerification(email: $email) {
      email
      expiresAt
    }
  }
`;

export const VerifyEmailMutation = gql<{ verifyEmail: Pick<User, "id" | "email" | "emailVerified"> }, { code: string }>`
  mutation VerifyEmail($code: String!) {
    verifyEmail(code: $code) {
      id
      email
      emailVerified
    }
  }
`;

export const EnrollTotpMutation = gql<{ enrollTotp: { secret: string; uri: string } }, Record<string, never>>`
  mutation EnrollTotp {
    enrollTotp {
      secret
      uri
    }
  }
`;

export const ConfirmTotpMutation = gql<{ confirmTotp: string[] }, { code: string }>`
  mutation ConfirmTotp($code: String!) {
    confirmTotp(code: $code)
  }
`;

export const DisableTotpMutation = gql<{ disableTotp: boolean }, { code: string }>`
  mutation DisableTotp($code: String!) {
    disableTotp(code: $code)
  }
`;

export const RegenerateRecoveryCodesMutation = gql<{ regenerateRecoveryCodes: string[] }, { code: string }>`
  mutation RegenerateRecoveryCodes($code: String!) {
    regenerateRecoveryCodes(code: $code)
  }
`;
