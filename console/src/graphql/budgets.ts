import { gql } from "@urql/vue";
import type { AccountBudgets, AlertOverview, AlertSettingsInput, BudgetsInput, WebhookDelivery } from "./types";

export const BUDGET_FIELDS = `period limit spent remaining startsAt resetsAt`;

export const AccountBudgetsQuery = gql<{ account: AccountBudgets }, Record<string, never>>`
  query AccountBudgets { account { id timeZone budgets { ${BUDGET_FIELDS} } budgetCaps { daily weekly monthly } } }
`;

export const SetAccountBudgetsMutation = gql<{ setAccountBudgets: AccountBudgets }, { input: BudgetsInput }>`
  mutation SetAccountBudgets($input: BudgetsInput!) {
    setAccountBudgets(input: $input) { id timeZone budgets { ${BUDGET_FIELDS} } budgetCaps { daily weekly monthly } }
  }
`;

export const SetAccountTimeZoneMutation = gql<
  { setAccountTimeZone: { id: string; timeZone: string } },
  { timeZone: string }
>`
  mutation SetAccountTimeZone($timeZone: String!) {
    setAccountTimeZone(timeZone: $timeZone) {
      id
      timeZone
    }
  }
`;

export const SetApiKeyBudgetsMutation = gql<{ setApiKeyBudgets: { id: string } }, { id: string; input: BudgetsInput }>`
  mutation SetApiKeyBudgets($id: ID!, $input: BudgetsInput!) { setApiKeyBudgets(id: $id, input: $input) { id budgets { ${BUDGET_FIELDS} } } }
`;

const DELIVERY_FIELDS = `id webhookId kind status attempts lastStatus lastError nextAttemptAt createdAt deliveredAt`;

export const AlertOverviewQuery = gql<AlertOverview, Record<string, never>>`
  query AlertOverview {
    alertSettings { percents balanceBelow keyExpiryDays emails webhooks { id url createdAt } }
    alertEvents(first: 20) { id kind payload firedAt }
    webhookDeliveries(first: 20) { ${DELIVERY_FIELDS} }
  }
`;

export const SetAlertSettingsMutation = gql<
  { setAlertSettings: { percents: number[] } },
  { input: AlertSettingsInput }
>`
  mutation SetAlertSettings($input: AlertSettingsInput!) {
    setAlertSettings(input: $input) {
      percents
      balanceBelow
      keyExpiryDays
      emails
    }
  }
`;

export const AddAlertWebhookMutation = gql<
  { addAlertWebhook: { secret: string; webhook: { id: string; url: string } } },
  { url: string }
>`
  mutation AddAlertWebhook($url: String!) {
    addAlertWebhook(url: $url) {
      secret
      webhook {
        id
        url
      }
    }
  }
`;

export const RemoveAlertWebhookMutation = gql<{ removeAlertWebhook: boolean }, { id: string }>`
  mutation RemoveAlertWebhook($id: ID!) {
    removeAlertWebhook(id: $id)
  }
`;

export const TestAlertWebhookMutation = gql<{ testAlertWebhook: WebhookDelivery }, { id: string }>`
  mutation TestAlertWebhook($id: ID!) { testAlertWebhook(id: $id) { ${DELIVERY_FIELDS} } }
`;
