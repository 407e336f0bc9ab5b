import { graphql } from "./generated";

export const AccountBudgetsFields = graphql(`
  fragment AccountBudgetsFields on Account {
    id
    timeZone
    budgets {
      ...BudgetFields
    }
    budgetCaps {
      daily
      weekly
      monthly
    }
  }
`);

export const AccountBudgetsQuery = graphql(`
  query AccountBudgets {
    account {
      ...AccountBudgetsFields
    }
  }
`);

export const SetAccountBudgetsMutation = graphql(`
  mutation SetAccountBudgets($input: BudgetsInput!) {
    setAccountBudgets(input: $input) {
      ...AccountBudgetsFields
    }
  }
`);

export const SetAccountTimeZoneMutation = graphql(`
  mutation SetAccountTimeZone($timeZone: String!) {
    setAccountTimeZone(timeZone: $timeZone) {
      id
      timeZone
    }
  }
`);

export const SetApiKeyBudgetsMutation = graphql(`
  mutation SetApiKeyBudgets($id: ID!, $input: BudgetsInput!) {
    setApiKeyBudgets(id: $id, input: $input) {
      id
      budgets {
        ...BudgetFields
      }
    }
  }
`);

export const WebhookDeliveryFields = graphql(`
  fragment WebhookDeliveryFields on WebhookDelivery {
    id
    webhookId
    kind
    status
    attempts
    lastStatus
    lastError
    nextAttemptAt
    createdAt
    deliveredAt
  }
`);

export const AlertOverviewQuery = graphql(`
  query AlertOverview {
    alertSettings {
      percents
      balanceBelow
      keyExpiryDays
      emails
      webhooks {
        id
        url
        createdAt
      }
    }
    alertEvents(first: 20) {
      id
      kind
      payload
      firedAt
    }
    webhookDeliveries(first: 20) {
      ...WebhookDeliveryFields
    }
  }
`);

export const SetAlertSettingsMutation = graphql(`
  mutation SetAlertSettings($input: AlertSettingsInput!) {
    setAlertSettings(input: $input) {
      percents
      balanceBelow
      keyExpiryDays
      emails
    }
  }
`);

export const AddAlertWebhookMutation = graphql(`
  mutation AddAlertWebhook($url: String!) {
    addAlertWebhook(url: $url) {
      secret
      webhook {
        id
        url
      }
    }
  }
`);

export const RemoveAlertWebhookMutation = graphql(`
  mutation RemoveAlertWebhook($id: ID!) {
    removeAlertWebhook(id: $id)
  }
`);

export const TestAlertWebhookMutation = graphql(`
  mutation TestAlertWebhook($id: ID!) {
    testAlertWebhook(id: $id) {
      ...WebhookDeliveryFields
    }
  }
`);
