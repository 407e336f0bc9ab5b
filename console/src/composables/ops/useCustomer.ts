import { useMutation, useQuery } from "@urql/vue";
import { computed, type Ref } from "vue";
import {
  AdjustMutation,
  CustomerLedgerQuery,
  CustomerQuery,
  DeleteContractMutation,
  InviteMutation,
  RemoveMemberMutation,
  RevokeInvitationMutation,
  SetContractMutation,
  SetLimitsMutation,
  SetStatusMutation,
  SetTrialPolicyMutation,
  TopUpMutation,
} from "../../graphql/operator";
import type { AccountStatus, InviteRole, PriceContractInput } from "../../graphql/generated/graphql";
import { refreshing } from "../refreshing";
import { useCursorPages } from "../useCursorPages";

export const CUSTOMER_LEDGER_PAGE_SIZE = 20;

/**
 * One customer for operators: the account with its limits, trial policy, members and invitations, its price
 * contracts and the models a contract can name; and every change an operator makes to it.
 */
export function useCustomer(id: Ref<string>) {
  const query = useQuery({
    query: CustomerQuery,
    variables: () => ({ id: id.value }),
    requestPolicy: "cache-and-network",
  });
  const refresh = () => query.executeQuery({ requestPolicy: "network-only" });
  const setStatusOp = useMutation(SetStatusMutation);
  const setLimitsOp = useMutation(SetLimitsMutation);
  const setTrialOp = useMutation(SetTrialPolicyMutation);
  const topUpOp = useMutation(TopUpMutation);
  const adjustOp = useMutation(AdjustMutation);
  const setContractOp = useMutation(SetContractMutation);
  const deleteContractOp = useMutation(DeleteContractMutation);
  const inviteOp = useMutation(InviteMutation);
  const revokeInvitationOp = useMutation(RevokeInvitationMutation);
  const removeMemberOp = useMutation(RemoveMemberMutation);

  return {
    account: computed(() => query.data.value?.account),
    priceContracts: computed(() => query.data.value?.priceContracts ?? []),
    catalogModels: computed(() => query.data.value?.catalogModels ?? []),
    fetching: query.fetching,
    error: query.error,
    refresh,
    setStatus: refreshing((status: AccountStatus) => setStatusOp.executeMutation({ id: id.value, status }), refresh),
    setLimits: refreshing(
      (limits: { rpm: number | null; tpm: number | null; concurrency: number | null }) =>
        setLimitsOp.executeMutation({ id: id.value, ...limits }),
      refresh,
    ),
    setTrialPolicy: refreshing(
      (quota: string, expiresAt: string) => setTrialOp.executeMutation({ id: id.value, quota, expiresAt }),
      refresh,
    ),
    topUp: refreshing(
      (amount: string, note: string | null) => topUpOp.executeMutation({ id: id.value, amount, note }),
      refresh,
    ),
    adjust: refreshing(
      (amount: string, note: string) => adjustOp.executeMutation({ id: id.value, amount, note }),
      refresh,
    ),
    setContract: refreshing(
      (input: Omit<PriceContractInput, "accountId">) =>
        setContractOp.executeMutation({ input: { ...input, accountId: id.value } }),
      refresh,
    ),
    deleteContract: refreshing(
      (modelId: string) => deleteContractOp.executeMutation({ id: id.value, modelId }),
      refresh,
    ),
    invite: refreshing(
      (email: string, role: InviteRole) => inviteOp.executeMutation({ id: id.value, email, role }),
      refresh,
    ),
    revokeInvitation: refreshing(
      (invitationId: string) => revokeInvitationOp.executeMutation({ id: invitationId }),
      refresh,
    ),
    removeMember: refreshing((userId: string) => removeMemberOp.executeMutation({ id: userId }), refresh),
  };
}

/** The customer's ledger, newest first, a page at a time. */
export function useCustomerLedger(id: Ref<string>) {
  const pages = useCursorPages();
  const query = useQuery({
    query: CustomerLedgerQuery,
    variables: () => ({ id: id.value, first: CUSTOMER_LEDGER_PAGE_SIZE, after: pages.after.value }),
    requestPolicy: "cache-and-network",
  });
  return {
    /** the connection (nodes, hasNextPage, endCursor), for the table and CursorPager */
    page: computed(() => query.data.value?.ledger),
    pages,
    error: query.error,
    refresh: () => query.executeQuery({ requestPolicy: "network-only" }),
  };
}
