import { gql } from "@urql/vue";
import type { ApiKey, ApiKeyRestrictionsInput } from "./types";

const KEY_FIELDS = `
  id name prefix state status allowedModels ipAllowlist quotaCap spent expiresAt revokedAt lastUsedAt createdAt
  rpm tpm concurrency budgets { period limit spent remaining startsAt resetsAt }
`;

export const ApiKeysQuery = gql<{ apiKeys: ApiKey[] }, Record<string, never>>`
  query ApiKeys { apiKeys(includeRevoked: true) { ${KEY_FIELDS} } }
`;

export const CreateApiKeyMutation = gql<
  { createApiKey: { key: string; apiKey: ApiKey } },
  { input: ApiKeyRestrictionsInput }
>`
  mutation CreateApiKey($input: ApiKeyRestrictionsInput!) {
    createApiKey(input: $input) { key apiKey { ${KEY_FIELDS} } }
  }
`;

export const UpdateApiKeyMutation = gql<{ updateApiKey: ApiKey }, { id: string; input: ApiKeyRestrictionsInput }>`
  mutation UpdateApiKey($id: ID!, $input: ApiKeyRestrictionsInput!) {
    updateApiKey(id: $id, input: $input) { ${KEY_FIELDS} }
  }
`;

export const RevokeApiKeyMutation = gql<{ revokeApiKey: ApiKey }, { id: string }>`
  mutation RevokeApiKey($id: ID!) { revokeApiKey(id: $id) { ${KEY_FIELDS} } }
`;
