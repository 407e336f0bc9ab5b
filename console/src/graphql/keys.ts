import { graphql } from "./generated";

export const BudgetFields = graphql(`
  fragment BudgetFields on Budget {
    period
    limit
    spent
    remaining
    startsAt
    resetsAt
  }
`);

export const ApiKeyFields = graphql(`
  fragment ApiKeyFields on ApiKey {
    id
    name
    prefix
    state
    status
    allowedModels
    ipAllowlist
    quotaCap
    spent
    expiresAt
    revokedAt
    lastUsedAt
    createdAt
    rpm
    tpm
    concurrency
    budgets {
      ...BudgetFields
    }
  }
`);

export const ApiKeysQuery = graphql(`
  query ApiKeys {
    apiKeys(includeRevoked: true) {
      ...ApiKeyFields
    }
  }
`);

export const CreateApiKeyMutation = graphql(`
  mutation CreateApiKey($input: ApiKeyRestrictionsInput!) {
    createApiKey(input: $input) {
      key
      apiKey {
        ...ApiKeyFields
      }
    }
  }
`);

export const UpdateApiKeyMutation = graphql(`
  mutation UpdateApiKey($id: ID!, $input: ApiKeyRestrictionsInput!) {
    updateApiKey(id: $id, input: $input) {
      ...ApiKeyFields
    }
  }
`);

export const RevokeApiKeyMutation = graphql(`
  mutation RevokeApiKey($id: ID!) {
    revokeApiKey(id: $id) {
      ...ApiKeyFields
    }
  }
`);
