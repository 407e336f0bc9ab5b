import { useMutation } from "@urql/vue";
import {
  ChangePasswordMutation,
  ConfirmTotpMutation,
  DisableTotpMutation,
  EnrollTotpMutation,
  RegenerateRecoveryCodesMutation,
  RequestEmailVerificationMutation,
  VerifyEmailMutation,
} from "../graphql/security";

/** Password, e-mail binding and two-step verification mutations. */
export function useSecurity() {
  return {
    changePassword: useMutation(ChangePasswordMutation),
    requestEmail: useMutation(RequestEmailVerificationMutation),
    verifyEmail: useMutation(VerifyEmailMutation),
    enrollTotp: useMutation(EnrollTotpMutation),
    confirmTotp: useMutation(ConfirmTotpMutation),
    disableTotp: useMutation(DisableTotpMutation),
    regenerateCodes: useMutation(RegenerateRecoveryCodesMutation),
  };
}
