import { graphql } from "./generated";

// The operator's pages: customers, contracts, the catalogue (models, upstreams, routes), health, usage across
// customers, users and invitations. Every change goes through the same GraphQL operations the CLI and scripts use.

export const OpsAccountFields = graphql(`
  fragment OpsAccountFields on Account {
    id
    name
    email
    kind
    status
    balance
    currency
    rpm
    tpm
    concurrency
    createdAt
    trialPolicy {
      quota
      expiresAt
    }
  }
`);

export const AccountsQuery = graphql(`
  query OpsAccounts($search: String, $first: Int, $offset: Int) {
    accounts(search: $search, first: $first, offset: $offset) {
      total
      nodes {
        ...OpsAccountFields
      }
    }
  }
`);

export const InvitationFields = graphql(`
  fragment InvitationFields on Invitation {
    id
    email
    role
    expiresAt
    acceptedAt
    revokedAt
  }
`);

export const PriceContractFields = graphql(`
  fragment PriceContractFields on PriceContract {
    id
    modelId
    inputPrice
    outputPrice
    cachedInputPrice
    updatedAt
  }
`);

export const CustomerQuery = graphql(`
  query OpsCustomer($id: ID!) {
    account(accountId: $id) {
      ...OpsAccountFields
      members {
        id
        email
        name
        role
        twoStepEnabled
        createdAt
      }
      invitations {
        ...InvitationFields
      }
    }
    priceContracts(accountId: $id) {
      ...PriceContractFields
    }
    catalogModels {
      id
    }
  }
`);

export const CustomerLedgerQuery = graphql(`
  query OpsLedger($id: ID!, $first: Int, $after: String) {
    ledger(accountId: $id, first: $first, after: $after) {
      endCursor
      hasNextPage
      nodes {
        ...LedgerEntryFields
      }
    }
  }
`);

export const CreateCustomerMutation = graphql(`
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
`);

export const SetStatusMutation = graphql(`
  mutation OpsSetStatus($id: ID!, $status: AccountStatus!) {
    setAccountStatus(accountId: $id, status: $status) {
      id
      status
    }
  }
`);

export const SetLimitsMutation = graphql(`
  mutation OpsSetLimits($id: ID!, $rpm: Int, $tpm: Int, $concurrency: Int) {
    setAccountLimits(accountId: $id, rpm: $rpm, tpm: $tpm, concurrency: $concurrency) {
      id
      rpm
      tpm
      concurrency
    }
  }
`);

export const SetTrialPolicyMutation = graphql(`
  mutation OpsSetTrial($id: ID!, $quota: String!, $expiresAt: DateTime!) {
    setTrialPolicy(accountId: $id, quota: $quota, expiresAt: $expiresAt) {
      id
      trialPolicy {
        quota
        expiresAt
      }
    }
  }
`);

export const TopUpMutation = graphql(`
  mutation OpsTopUp($id: ID!, $amount: String!, $note: String) {
    topUp(accountId: $id, amount: $amount, note: $note) {
      id
      balance
    }
  }
`);

export const AdjustMutation = graphql(`
  mutation OpsAdjust($id: ID!, $amount: String!, $note: String!) {
    adjustBalance(accountId: $id, amount: $amount, note: $note) {
      id
      balance
    }
  }
`);

export const SetContractMutation = graphql(`
  mutation OpsSetContract($input: PriceContractInput!) {
    setPriceContract(input: $input) {
      ...PriceContractFields
    }
  }
`);

export const DeleteContractMutation = graphql(`
  mutation OpsDeleteContract($id: ID!, $modelId: String!) {
    deletePriceContract(accountId: $id, modelId: $modelId)
  }
`);

export const InviteMutation = graphql(`
  mutation OpsInvite($id: ID, $email: String!, $role: InviteRole) {
    createInvitation(accountId: $id, email: $email, role: $role) {
      token
      invitation {
        ...InvitationFields
      }
    }
  }
`);

export const RevokeInvitationMutation = graphql(`
  mutation OpsRevokeInvitation($id: ID!) {
    revokeInvitation(id: $id) {
      id
      revokedAt
    }
  }
`);

export const RemoveMemberMutation = graphql(`
  mutation OpsRemoveMember($id: ID!) {
    removeMember(userId: $id)
  }
`);

export const UpstreamFields = graphql(`
  fragment UpstreamFields on Upstream {
    id
    name
    provider
    protocol
    baseUrl
    apiVersion
    region
    project
    auth
    hasApiKey
    secretsSet
    enabled
    source
    keys {
      ...UpstreamKeyFields
    }
  }
`);

export const UpstreamKeyFields = graphql(`
  fragment UpstreamKeyFields on UpstreamKey {
    id
    weight
    state
    reason
    disabledAt
  }
`);

export const SetUpstreamKeyEnabledMutation = graphql(`
  mutation SetUpstreamKeyEnabled($upstream: String!, $key: String!, $enabled: Boolean!) {
    setUpstreamKeyEnabled(upstream: $upstream, key: $key, enabled: $enabled) {
      ...UpstreamKeyFields
    }
  }
`);

export const CatalogQuery = graphql(`
  query OpsCatalog {
    catalogModels {
      id
      displayName
      enabled
      reasoning
      strict
      fallbacks
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
      ...UpstreamFields
    }
    upstreamProviders {
      name
      requiredOptions
      options
      secrets
      needsKey
    }
  }
`);

export const UpsertModelMutation = graphql(`
  mutation OpsUpsertModel($input: ModelInput!) {
    upsertModel(input: $input) {
      id
    }
  }
`);
export const DeleteModelMutation = graphql(`
  mutation OpsDeleteModel($id: String!) {
    deleteModel(id: $id)
  }
`);
export const UpsertUpstreamMutation = graphql(`
  mutation OpsUpsertUpstream($input: UpstreamInput!) {
    upsertUpstream(input: $input) {
      id
      hasApiKey
    }
  }
`);
export const DeleteUpstreamMutation = graphql(`
  mutation OpsDeleteUpstream($id: ID!) {
    deleteUpstream(id: $id)
  }
`);
export const UpsertRouteMutation = graphql(`
  mutation OpsUpsertRoute($input: RouteInput!) {
    upsertRoute(input: $input) {
      id
    }
  }
`);
export const DeleteRouteMutation = graphql(`
  mutation OpsDeleteRoute($id: ID!) {
    deleteRoute(id: $id)
  }
`);

export const UsageGroupFields = graphql(`
  fragment UsageGroupFields on UsageGroup {
    key
    label
    ...UsageFiguresFields
  }
`);

export const HealthQuery = graphql(`
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
      keys {
        ...UpstreamKeyFields
        breaker
      }
    }
    operatorUsage(from: $from, to: $to) {
      byAccount {
        ...UsageGroupFields
      }
      byModel {
        ...UsageGroupFields
      }
      byUpstream {
        ...UsageGroupFields
      }
    }
  }
`);

export const UsersQuery = graphql(`
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
`);

export const CreateUserMutation = graphql(`
  mutation OpsCreateUser($email: String!, $password: String!, $role: UserRole!, $accountId: ID, $name: String) {
    createUser(email: $email, password: $password, role: $role, accountId: $accountId, name: $name) {
      id
    }
  }
`);
