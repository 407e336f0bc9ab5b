import { useMutation, useQuery } from "@urql/vue";
import { computed } from "vue";
import {
  AccountBudgetsQuery,
  AddAlertWebhookMutation,
  AlertOverviewQuery,
  RemoveAlertWebhookMutation,
  SetAccountBudgetsMutation,
  SetAccountTimeZoneMutation,
  SetAlertSettingsMutation,
  TestAlertWebhookMutation,
} from "../graphql/budgets";
import type { AlertSettingsInput, BudgetsInput } from "../graphql/generated/graphql";
import { refreshing } from "./refreshing";

/** The account's own budgets and the time zone their periods follow; both reload the account after a change. */
export function useAccountBudgets() {
  const query = useQuery({ query: AccountBudgetsQuery, requestPolicy: "cache-and-network" });
  const refresh = () => query.executeQuery({ requestPolicy: "network-only" });
  const setBudgetsOp = useMutation(SetAccountBudgetsMutation);
  const setTimeZoneOp = useMutation(SetAccountTimeZoneMutation);
  return {
    account: computed(() => query.data.value?.account),
    fetching: query.fetching,
    error: query.error,
    refresh,
    savingBudgets: setBudgetsOp.fetching,
    savingTimeZone: setTimeZoneOp.fetching,
    setBudgets: refreshing((input: BudgetsInput) => setBudgetsOp.executeMutation({ input }), refresh),
    setTimeZone: refreshing((timeZone: string) => setTimeZoneOp.executeMutation({ timeZone }), refresh),
  };
}

/**
 * The account's alerts: their settings, webhooks, deliveries and the events that fired; every change (settings,
 * adding, testing or removing a webhook) reads the overview again.
 */
export function useAlerts() {
  const query = useQuery({ query: AlertOverviewQuery, requestPolicy: "cache-and-network" });
  const refresh = () => query.executeQuery({ requestPolicy: "network-only" });
  const setSettingsOp = useMutation(SetAlertSettingsMutation);
  const addOp = useMutation(AddAlertWebhookMutation);
  const removeOp = useMutation(RemoveAlertWebhookMutation);
  const testOp = useMutation(TestAlertWebhookMutation);
  return {
    overview: computed(() => query.data.value),
    error: query.error,
    refresh,
    savingSettings: setSettingsOp.fetching,
    adding: addOp.fetching,
    testing: testOp.fetching,
    setSettings: refreshing((input: AlertSettingsInput) => setSettingsOp.executeMutation({ input }), refresh),
    addWebhook: refreshing((url: string) => addOp.executeMutation({ url }), refresh),
    testWebhook: refreshing((id: string) => testOp.executeMutation({ id }), refresh),
    removeWebhook: refreshing((id: string) => removeOp.executeMutation({ id }), refresh),
  };
}
