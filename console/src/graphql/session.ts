import { graphql } from "./generated";

export const UserFields = graphql(`
  fragment UserFields on User {
    id
    email
    name
    role
    emailVerified
    twoStepEnabled
    account {
      id
      name
      currency
      kind
      status
      trialPolicy {
        expiresAt
        quota
      }
    }
  }
`);

export const MeQuery = graphql(`
  query Me {
    me {
      via
      recoveryCodesLeft
      user {
        ...UserFields
      }
    }
  }
`);

export const LoginMutation = graphql(`
  mutation Login($email: String!, $password: String!) {
    login(email: $email, password: $password) {
      secondStepRequired
      user {
        ...UserFields
      }
    }
  }
`);

export const VerifySecondStepMutation = graphql(`
  mutation VerifySecondStep($code: String!) {
    verifySecondStep(code: $code) {
      ...UserFields
    }
  }
`);

export const LogoutMutation = graphql(`
  mutation Logout {
    logout
  }
`);

/** Operations that answer UNAUTHENTICATED as part of signing in (a wrong password), not because a session expired. */
export const SIGN_IN_OPERATIONS = new Set(["Me", "Login", "VerifySecondStep", "Logout"]);
