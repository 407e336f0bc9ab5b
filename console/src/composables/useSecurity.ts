import { useClientHandle, useMutation } from "@urql/vue";
import {
  ChangePasswordMutation,
  ConfirmTotpMutation,
  DisableTotpMutation,
  EnrollTotpMutation,
  RegenerateRecoveryCodesMutation,
  RequestEmailVerificationMutation,
  VerifyEmailMutation,
} from "../graphql/security";
import { loadSession } from "./useSession";

/**
 * Password, e-mail binding and two-step verification mutations, and reading the signed-in user again after one
 * changed what the session shows (a verified e-mail, two-step on or off, the recovery codes left).
 */
export function useSecurity() {
  const client = useClientHandle().client;
  return {
    reloadSession: () => loadSession(client, true),
    changePassword: useMutation(ChangePasswordMutation),
    requestEmail: useMutation(RequestEmailVerificationMutation),
    verifyEmail: useMutation(VerifyEmailMutation),
    enrollTotp: useMutation(EnrollTotpMutation),
    confirmTotp: useMutation(ConfirmTotpMutation),
    disableTotp: useMutation(DisableTotpMutation),
    regenerateCodes: useMutation(RegenerateRecoveryCodesMutation),
  };
}
