import { gql } from "@urql/vue";
import type { LedgerEntry, Page } from "./types";

// The operator's pages: customers, contracts, the catalogue (models, upstreams, routes), health, usage across
// customers, users and invitations. Every change goes through the same GraphQL operations the CLI and scripts use.

export interface OpsAccount {
  id: string;
  name: string;
  email: string | null;
  kind: "standard" | "trial";
  status: "active" | "disabled";
  balance: string;
  currency: string;
  rpm: number | null;
  tpm: number | null;
  concurrency: number | null;
  createdAt: string;
  trialPolicy: { quota: string; expiresAt: string } | null;
}
export interface OpsUser {
  id: string;
  email: string;
  name: string | null;
  role: "member" | "owner" | "operator";
  twoStepEnabled: boolean;
  createdAt: string;
  account?: { id: string; name: string } | null;
}
export interface OpsInvitation {
  id: string;
  email: string;
  role: string;
  expiresAt: string;
  acceptedAt: string | null;
  revokedAt: string | null;
}
export interface OpsContract {
  id: string;
  modelId: string;
  inputPrice: string;
  outputPrice: string;
  cachedInputPrice: string | null;
  updatedAt: string;
}
export interface OpsUpstream {
  id: string;
  name: string;
  protocol: string;
  baseUrl: string;
  hasApiKey: boolean;
  enabled: boolean;
  source: string;
}
export interface OpsRoute {
  id: string;
  modelId: string;
  upstreamModel: string;
  weight: number;
  priority: number;
  upstream: { id: string; name: string };
}
export interface OpsModel {
  id: string;
  displayName: string | null;
  enabled: boolean;
  reasoning: boolean;
  source: string;
  inputPrice: string;
  outputPrice: string;
  cachedInputPrice: string | null;
  routes: OpsRoute[];
}
export interface UsageGroup {
  key: string;
  label: string | null;
  requests: number;
  errors: number;
  promptTokens: number;
  completionTokens: number;
  amount: string;
}
export interface UpstreamHealthRow {
  id: string;
  name: string;
  enabled: boolean;
  breaker: string | null;
  requests: number;
  errors: number;
  errorRate: number | null;
  latencyAvgMs: number | null;
  latencyP95Ms: number | null;
  ttftAvgMs: number | null;
  ttftP95Ms: number | null;
  lastCallAt: string | null;
}

const ACCOUNT_FIELDS =
  "id name email kind status balance currency rpm tpm concurrency createdAt trialPolicy { quota expiresAt }";

export const AccountsQuery = gql<
  { accounts: { total: number; nodes: OpsAccount[] } },
  { search: string | null; first: number; offset: number }
>`
  query OpsAccounts($search: String, $first: Int, $offset: Int) {
    accounts(search: $search, first: $first, offset: $offset) { total nodes { ${ACCOUNT_FIELDS} } }
  }
`;

export const CustomerQuery = gql<
  {
    account: OpsAccount & { members: OpsUser[]; invitations: OpsInvitation[] };
    priceContracts: OpsContract[];
    catalogModels: { id: string }[];
  },
  { id: string }
>`
  query OpsCustomer($id: ID!) {
    account(accountId: $id) {
      ${ACCOUNT_FIELDS}
      members { id email name role twoStepEnabled createdAt }
      invitations { id email role expiresAt acceptedAt revokedAt }
    }
    priceContracts(accountId: $id) { id modelId inputPrice outputPrice cachedInputPrice updatedAt }
    catalogModels { id }
  }
`;

export const CustomerLedgerQuery = gql<
  { ledger: Page<LedgerEntry> },
  { id: string; first: number; after: string | null }
>`
  query OpsLedger($id: ID!, $first: Int, $after: String) {
    ledger(accountId: $id, first: $first, after: $after) {
      endCursor
      hasNextPage
      nodes {
        id
        createdAt
        kind
        amount
        balanceAfter
        note
        requestId
        apiKeyId
      }
    }
  }
`;

export const CreateCustomerMutation = gql<
  {
    createCustomer: {
      account: { id: string; name: string };
      owner: { id: string } | null;
      invitationToken: string | null;
    };
  },
  { input: Record<string, unknown> }
>`
  mutation OpsCreateCustomer($input: CreateCustomerInput!) {
    createCustomer(input: $input) {
      account {
        id
        name
      }
      owner {
        id
      }
      invitationToken
    }
  }
`;

export const SetStatusMutation = gql<
  { setAccountStatus: { id: string; status: string } },
  { id: string; status: string }
>`
  mutation OpsSetStatus($id: ID!, $status: AccountStatus!) {
    setAccountStatus(accountId: $id, status: $status) {
      id
      status
    }
  }
`;

export const SetLimitsMutation = gql<
  { setAccountLimits: { id: string } },
  { id: string; rpm: number | null; tpm: number | null; concurrency: number | null }
>`
  mutation OpsSetLimits($id: ID!, $rpm: Int, $tpm: Int, $concurrency: Int) {
    setAccountLimits(accountId: $id, rpm: $rpm, tpm: $tpm, concurrency: $concurrency) {
      id
      rpm
      tpm
      concurrency
    }
  }
`;

export const SetTrialPolicyMutation = gql<
  { setTrialPolicy: { id: string } },
  { id: string; quota: string; expiresAt: string }
>`
  mutation OpsSetTrial($id: ID!, $quota: String!, $expiresAt: DateTime!) {
    setTrialPolicy(accountId: $id, quota: $quota, expiresAt: $expiresAt) {
      id
      trialPolicy {
        quota
        expiresAt
      }
    }
  }
`;

export const TopUpMutation = gql<
  { topUp: { id: string; balance: string } },
  { id: string; amount: string; note: string | null }
>`
  mutation OpsTopUp($id: ID!, $amount: String!, $note: String) {
    topUp(accountId: $id, amount: $amount, note: $note) {
      id
      balance
    }
  }
`;

export const AdjustMutation = gql<
  { adjustBalance: { id: string; balance: string } },
  { id: string; amount: string; note: string }
>`
  mutation OpsAdjust($id: ID!, $amount: String!, $note: String!) {
    adjustBalance(accountId: $id, amount: $amount, note: $note) {
      id
      balance
    }
  }
`;

export const SetContractMutation = gql<{ setPriceContract: OpsContract }, { input: Record<string, unknown> }>`
  mutation OpsSetContract($input: PriceContractInput!) {
    setPriceContract(input: $input) {
      id
      modelId
      inputPrice
      outputPrice
      cachedInputPrice
      updatedAt
    }
  }
`;

export const DeleteContractMutation = gql<{ deletePriceContract: boolean }, { id: string; modelId: string }>`
  mutation OpsDeleteContract($id: ID!, $modelId: String!) {
    deletePriceContract(accountId: $id, modelId: $modelId)
  }
`;

export const InviteMutation = gql<
  { createInvitation: { token: string; invitation: OpsInvitation } },
  { id: string; email: string; role: string }
>`
  mutation OpsInvite($id: ID, $email: String!, $role: InviteRole) {
    createInvitation(accountId: $id, email: $email, role: $role) {
      token
      invitation {
        id
        email
        role
        expiresAt
        acceptedAt
        revokedAt
      }
    }
  }
`;

export const RevokeInvitationMutation = gql<{ revokeInvitation: { id: string } }, { id: string }>`
  mutation OpsRevokeInvitation($id: ID!) {
    revokeInvitation(id: $id) {
      id
      revokedAt
    }
  }
`;

export const RemoveMemberMutation = gql<{ removeMember: boolean }, { id: string }>`
  mutation OpsRemoveMember($id: ID!) {
    removeMember(userId: $id)
  }
`;

export const CatalogQuery = gql<{ catalogModels: OpsModel[]; upstreams: OpsUpstream[] }, Record<string, never>>`
  query OpsCatalog {
    catalogModels {
      id
      displayName
      enabled
      reasoning
      source
      inputPrice
      outputPrice
      cachedInputPrice
      routes {
        id
        modelId
        upstreamModel
        weight
        priority
        upstream {
          id
          name
        }
      }
    }
    upstreams {
      id
      name
      protocol
      baseUrl
      hasApiKey
      enabled
      source
    }
  }
`;

export const UpsertModelMutation = gql<{ upsertModel: { id: string } }, { input: Record<string, unknown> }>`
  mutation OpsUpsertModel($input: ModelInput!) {
    upsertModel(input: $input) {
      id
    }
  }
`;
export const DeleteModelMutation = gql<{ deleteModel: boolean }, { id: string }>`
  mutation OpsDeleteModel($id: String!) {
    deleteModel(id: $id)
  }
`;
export const UpsertUpstreamMutation = gql<
  { upsertUpstream: { id: string; hasApiKey: boolean } },
  { input: Record<string, unknown> }
>`
  mutation OpsUpsertUpstream($input: UpstreamInput!) {
    upsertUpstream(input: $input) {
      id
      hasApiKey
    }
  }
`;
export const DeleteUpstreamMutation = gql<{ deleteUpstream: boolean }, { id: string }>`
  mutation OpsDeleteUpstream($id: ID!) {
    deleteUpstream(id: $id)
  }
`;
export const UpsertRouteMutation = gql<{ upsertRoute: { id: string } }, { input: Record<string, unknown> }>`
  mutation OpsUpsertRoute($input: RouteInput!) {
    upsertRoute(input: $input) {
      id
    }
  }
`;
export const DeleteRouteMutation = gql<{ deleteRoute: boolean }, { id: string }>`
  mutation OpsDeleteRoute($id: ID!) {
    deleteRoute(id: $id)
  }
`;

export const HealthQuery = gql<
  {
    upstreamHealth: UpstreamHealthRow[];
    operatorUsage: { byAccount: UsageGroup[]; byModel: UsageGroup[]; byUpstream: UsageGroup[] };
  },
  { minutes: number; from: string; to: string }
>`
  query OpsHealth($minutes: Int, $from: DateTime, $to: DateTime) {
    upstreamHealth(minutes: $minutes) {
      id
      name
      enabled
      breaker
      requests
      errors
      errorRate
      latencyAvgMs
      latencyP95Ms
      ttftAvgMs
      ttftP95Ms
      lastCallAt
    }
    operatorUsage(from: $from, to: $to) {
      byAccount {
        key
        label
        requests
        errors
        promptTokens
        completionTokens
        amount
      }
      byModel {
        key
        label
        requests
        errors
        promptTokens
        completionTokens
        amount
      }
      byUpstream {
        key
        label
        requests
        errors
        promptTokens
        completionTokens
        amount
      }
    }
  }
`;

export const UsersQuery = gql<
  { users: (OpsUser & { account: { id: string; name: string } | null })[] },
  Record<string, never>
>`
  query OpsUsers {
    users {
      id
      email
      name
      role
      twoStepEnabled
      createdAt
      account {
        id
        name
      }
    }
  }
`;

export const CreateUserMutation = gql<
  { createUser: { id: string } },
  { email: string; password: string; role: string; accountId: string | null; name: string | null }
>`
  mutation OpsCreateUser($email: String!, $password: String!, $role: UserRole!, $accountId: ID, $name: String) {
    createUser(email: $email, password: $password, role: $role, accountId: $accountId, name: $name) {
      id
    }
  }
`;
