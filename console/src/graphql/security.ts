import { graphql } from "./generated";

export const ChangePasswordMutation = graphql(`
  mutation ChangePassword($currentPassword: String!, $newPassword: String!, $code: String) {
    changePassword(currentPassword: $currentPassword, newPassword: $newPassword, code: $code)
  }
`);

export const RequestEmailVerificationMutation = graphql(`
  mutation RequestEmailVerification($email: String) {
    requestEmailVerification(email: $email) {
      email
      expiresAt
    }
  }
`);

export const VerifyEmailMutation = graphql(`
  mutation VerifyEmail($code: String!) {
    verifyEmail(code: $code) {
      id
      email
      emailVerified
    }
  }
`);

export const EnrollTotpMutation = graphql(`
  mutation EnrollTotp {
    enrollTotp {
      secret
      uri
    }
  }
`);

export const ConfirmTotpMutation = graphql(`
  mutation ConfirmTotp($code: String!) {
    confirmTotp(code: $code)
  }
`);

export const DisableTotpMutation = graphql(`
  mutation DisableTotp($code: String!) {
    disableTotp(code: $code)
  }
`);

export const RegenerateRecoveryCodesMutation = graphql(`
  mutation RegenerateRecoveryCodes($code: String!) {
    regenerateRecoveryCodes(code: $code)
  }
`);
