/* eslint-disable */
import * as types from './graphql';
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';

/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "\n  query AuditLog($first: Int, $after: String, $filter: AuditFilter) {\n    auditLog(first: $first, after: $after, filter: $filter) {\n      endCursor\n      hasNextPage\n      nodes {\n        id\n        createdAt\n        actorType\n        actorEmail\n        actorVia\n        actorAddress\n        action\n        accountId\n        subjectType\n        subjectId\n        before\n        after\n      }\n    }\n  }\n": typeof types.AuditLogDocument,
    "\n  mutation StartAuditExport($format: ExportFormat!, $filter: AuditFilter) {\n    startAuditExport(format: $format, filter: $filter) {\n      id\n      status\n    }\n  }\n": typeof types.StartAuditExportDocument,
    "\n  query AuditExport($id: ID!) {\n    export(id: $id) {\n      id\n      status\n      rowCount\n      downloadUrl\n      error\n    }\n  }\n": typeof types.AuditExportDocument,
    "\n  fragment AccountBudgetsFields on Account {\n    id\n    timeZone\n    budgets {\n      ...BudgetFields\n    }\n    budgetCaps {\n      daily\n      weekly\n      monthly\n    }\n  }\n": typeof types.AccountBudgetsFieldsFragmentDoc,
    "\n  query AccountBudgets {\n    account {\n      ...AccountBudgetsFields\n    }\n  }\n": typeof types.AccountBudgetsDocument,
    "\n  mutation SetAccountBudgets($input: BudgetsInput!) {\n    setAccountBudgets(input: $input) {\n      ...AccountBudgetsFields\n    }\n  }\n": typeof types.SetAccountBudgetsDocument,
    "\n  mutation SetAccountTimeZone($timeZone: String!) {\n    setAccountTimeZone(timeZone: $timeZone) {\n      id\n      timeZone\n    }\n  }\n": typeof types.SetAccountTimeZoneDocument,
    "\n  mutation SetApiKeyBudgets($id: ID!, $input: BudgetsInput!) {\n    setApiKeyBudgets(id: $id, input: $input) {\n      id\n      budgets {\n        ...BudgetFields\n      }\n    }\n  }\n": typeof types.SetApiKeyBudgetsDocument,
    "\n  fragment WebhookDeliveryFields on WebhookDelivery {\n    id\n    webhookId\n    kind\n    status\n    attempts\n    lastStatus\n    lastError\n    nextAttemptAt\n    createdAt\n    deliveredAt\n  }\n": typeof types.WebhookDeliveryFieldsFragmentDoc,
    "\n  query AlertOverview {\n    alertSettings {\n      percents\n      balanceBelow\n      keyExpiryDays\n      emails\n      webhooks {\n        id\n        url\n        createdAt\n      }\n    }\n    alertEvents(first: 20) {\n      id\n      kind\n      payload\n      firedAt\n    }\n    webhookDeliveries(first: 20) {\n      ...WebhookDeliveryFields\n    }\n  }\n": typeof types.AlertOverviewDocument,
    "\n  mutation SetAlertSettings($input: AlertSettingsInput!) {\n    setAlertSettings(input: $input) {\n      percents\n      balanceBelow\n      keyExpiryDays\n      emails\n    }\n  }\n": typeof types.SetAlertSettingsDocument,
    "\n  mutation AddAlertWebhook($url: String!) {\n    addAlertWebhook(url: $url) {\n      secret\n      webhook {\n        id\n        url\n      }\n    }\n  }\n": typeof types.AddAlertWebhookDocument,
    "\n  mutation RemoveAlertWebhook($id: ID!) {\n    removeAlertWebhook(id: $id)\n  }\n": typeof types.RemoveAlertWebhookDocument,
    "\n  mutation TestAlertWebhook($id: ID!) {\n    testAlertWebhook(id: $id) {\n      ...WebhookDeliveryFields\n    }\n  }\n": typeof types.TestAlertWebhookDocument,
    "\n  fragment BudgetFields on Budget {\n    period\n    limit\n    spent\n    remaining\n    startsAt\n    resetsAt\n  }\n": typeof types.BudgetFieldsFragmentDoc,
    "\n  fragment ApiKeyFields on ApiKey {\n    id\n    name\n    prefix\n    state\n    status\n    allowedModels\n    ipAllowlist\n    quotaCap\n    spent\n    expiresAt\n    revokedAt\n    lastUsedAt\n    createdAt\n    rpm\n    tpm\n    concurrency\n    budgets {\n      ...BudgetFields\n    }\n  }\n": typeof types.ApiKeyFieldsFragmentDoc,
    "\n  query ApiKeys {\n    apiKeys(includeRevoked: true) {\n      ...ApiKeyFields\n    }\n  }\n": typeof types.ApiKeysDocument,
    "\n  mutation CreateApiKey($input: ApiKeyRestrictionsInput!) {\n    createApiKey(input: $input) {\n      key\n      apiKey {\n        ...ApiKeyFields\n      }\n    }\n  }\n": typeof types.CreateApiKeyDocument,
    "\n  mutation UpdateApiKey($id: ID!, $input: ApiKeyRestrictionsInput!) {\n    updateApiKey(id: $id, input: $input) {\n      ...ApiKeyFields\n    }\n  }\n": typeof types.UpdateApiKeyDocument,
    "\n  mutation RevokeApiKey($id: ID!) {\n    revokeApiKey(id: $id) {\n      ...ApiKeyFields\n    }\n  }\n": typeof types.RevokeApiKeyDocument,
    "\n  fragment CustomerModelFields on CustomerModel {\n    id\n    displayName\n    reasoning\n    inputPrice\n    outputPrice\n    cachedInputPrice\n    contracted\n  }\n": typeof types.CustomerModelFieldsFragmentDoc,
    "\n  query Models {\n    models {\n      ...CustomerModelFields\n    }\n  }\n": typeof types.ModelsDocument,
    "\n  fragment OpsAccountFields on Account {\n    id\n    name\n    email\n    kind\n    status\n    balance\n    currency\n    rpm\n    tpm\n    concurrency\n    createdAt\n    trialPolicy {\n      quota\n      expiresAt\n    }\n  }\n": typeof types.OpsAccountFieldsFragmentDoc,
    "\n  query OpsAccounts($search: String, $first: Int, $offset: Int) {\n    accounts(search: $search, first: $first, offset: $offset) {\n      total\n      nodes {\n        ...OpsAccountFields\n      }\n    }\n  }\n": typeof types.OpsAccountsDocument,
    "\n  fragment InvitationFields on Invitation {\n    id\n    email\n    role\n    expiresAt\n    acceptedAt\n    revokedAt\n  }\n": typeof types.InvitationFieldsFragmentDoc,
    "\n  fragment PriceContractFields on PriceContract {\n    id\n    modelId\n    inputPrice\n    outputPrice\n    cachedInputPrice\n    updatedAt\n  }\n": typeof types.PriceContractFieldsFragmentDoc,
    "\n  query OpsCustomer($id: ID!) {\n    account(accountId: $id) {\n      ...OpsAccountFields\n      members {\n        id\n        email\n        name\n        role\n        twoStepEnabled\n        createdAt\n      }\n      invitations {\n        ...InvitationFields\n      }\n    }\n    priceContracts(accountId: $id) {\n      ...PriceContractFields\n    }\n    catalogModels {\n      id\n    }\n  }\n": typeof types.OpsCustomerDocument,
    "\n  query OpsLedger($id: ID!, $first: Int, $after: String) {\n    ledger(accountId: $id, first: $first, after: $after) {\n      endCursor\n      hasNextPage\n      nodes {\n        ...LedgerEntryFields\n      }\n    }\n  }\n": typeof types.OpsLedgerDocument,
    "\n  mutation OpsCreateCustomer($input: CreateCustomerInput!) {\n    createCustomer(input: $input) {\n      account {\n        id\n        name\n      }\n      owner {\n        id\n      }\n      invitationToken\n    }\n  }\n": typeof types.OpsCreateCustomerDocument,
    "\n  mutation OpsSetStatus($id: ID!, $status: AccountStatus!) {\n    setAccountStatus(accountId: $id, status: $status) {\n      id\n      status\n    }\n  }\n": typeof types.OpsSetStatusDocument,
    "\n  mutation OpsSetLimits($id: ID!, $rpm: Int, $tpm: Int, $concurrency: Int) {\n    setAccountLimits(accountId: $id, rpm: $rpm, tpm: $tpm, concurrency: $concurrency) {\n      id\n      rpm\n      tpm\n      concurrency\n    }\n  }\n": typeof types.OpsSetLimitsDocument,
    "\n  mutation OpsSetTrial($id: ID!, $quota: String!, $expiresAt: DateTime!) {\n    setTrialPolicy(accountId: $id, quota: $quota, expiresAt: $expiresAt) {\n      id\n      trialPolicy {\n        quota\n        expiresAt\n      }\n    }\n  }\n": typeof types.OpsSetTrialDocument,
    "\n  mutation OpsTopUp($id: ID!, $amount: String!, $note: String) {\n    topUp(accountId: $id, amount: $amount, note: $note) {\n      id\n      balance\n    }\n  }\n": typeof types.OpsTopUpDocument,
    "\n  mutation OpsAdjust($id: ID!, $amount: String!, $note: String!) {\n    adjustBalance(accountId: $id, amount: $amount, note: $note) {\n      id\n      balance\n    }\n  }\n": typeof types.OpsAdjustDocument,
    "\n  mutation OpsSetContract($input: PriceContractInput!) {\n    setPriceContract(input: $input) {\n      ...PriceContractFields\n    }\n  }\n": typeof types.OpsSetContractDocument,
    "\n  mutation OpsDeleteContract($id: ID!, $modelId: String!) {\n    deletePriceContract(accountId: $id, modelId: $modelId)\n  }\n": typeof types.OpsDeleteContractDocument,
    "\n  mutation OpsInvite($id: ID, $email: String!, $role: InviteRole) {\n    createInvitation(accountId: $id, email: $email, role: $role) {\n      token\n      invitation {\n        ...InvitationFields\n      }\n    }\n  }\n": typeof types.OpsInviteDocument,
    "\n  mutation OpsRevokeInvitation($id: ID!) {\n    revokeInvitation(id: $id) {\n      id\n      revokedAt\n    }\n  }\n": typeof types.OpsRevokeInvitationDocument,
    "\n  mutation OpsRemoveMember($id: ID!) {\n    removeMember(userId: $id)\n  }\n": typeof types.OpsRemoveMemberDocument,
    "\n  fragment UpstreamFields on Upstream {\n    id\n    name\n    provider\n    protocol\n    baseUrl\n    apiVersion\n    region\n    project\n    auth\n    hasApiKey\n    secretsSet\n    enabled\n    source\n    keys {\n      ...UpstreamKeyFields\n    }\n  }\n": typeof types.UpstreamFieldsFragmentDoc,
    "\n  fragment UpstreamKeyFields on UpstreamKey {\n    id\n    weight\n    state\n    reason\n    disabledAt\n  }\n": typeof types.UpstreamKeyFieldsFragmentDoc,
    "\n  mutation SetUpstreamKeyEnabled($upstream: String!, $key: String!, $enabled: Boolean!) {\n    setUpstreamKeyEnabled(upstream: $upstream, key: $key, enabled: $enabled) {\n      ...UpstreamKeyFields\n    }\n  }\n": typeof types.SetUpstreamKeyEnabledDocument,
    "\n  query OpsCatalog {\n    catalogModels {\n      id\n      displayName\n      enabled\n      reasoning\n      strict\n      fallbacks\n      source\n      inputPrice\n      outputPrice\n      cachedInputPrice\n      routes {\n        id\n        modelId\n        upstreamModel\n        weight\n        priority\n        upstream {\n          id\n          name\n        }\n      }\n    }\n    upstreams {\n      ...UpstreamFields\n    }\n    upstreamProviders {\n      name\n      requiredOptions\n      options\n      secrets\n      needsKey\n    }\n  }\n": typeof types.OpsCatalogDocument,
    "\n  mutation OpsUpsertModel($input: ModelInput!) {\n    upsertModel(input: $input) {\n      id\n    }\n  }\n": typeof types.OpsUpsertModelDocument,
    "\n  mutation OpsDeleteModel($id: String!) {\n    deleteModel(id: $id)\n  }\n": typeof types.OpsDeleteModelDocument,
    "\n  mutation OpsUpsertUpstream($input: UpstreamInput!) {\n    upsertUpstream(input: $input) {\n      id\n      hasApiKey\n    }\n  }\n": typeof types.OpsUpsertUpstreamDocument,
    "\n  mutation OpsDeleteUpstream($id: ID!) {\n    deleteUpstream(id: $id)\n  }\n": typeof types.OpsDeleteUpstreamDocument,
    "\n  mutation OpsUpsertRoute($input: RouteInput!) {\n    upsertRoute(input: $input) {\n      id\n    }\n  }\n": typeof types.OpsUpsertRouteDocument,
    "\n  mutation OpsDeleteRoute($id: ID!) {\n    deleteRoute(id: $id)\n  }\n": typeof types.OpsDeleteRouteDocument,
    "\n  fragment UsageGroupFields on UsageGroup {\n    key\n    label\n    ...UsageFiguresFields\n  }\n": typeof types.UsageGroupFieldsFragmentDoc,
    "\n  query OpsHealth($minutes: Int, $from: DateTime, $to: DateTime) {\n    upstreamHealth(minutes: $minutes) {\n      id\n      name\n      enabled\n      breaker\n      requests\n      errors\n      errorRate\n      latencyAvgMs\n      latencyP95Ms\n      ttftAvgMs\n      ttftP95Ms\n      lastCallAt\n      keys {\n        ...UpstreamKeyFields\n        breaker\n      }\n    }\n    operatorUsage(from: $from, to: $to) {\n      byAccount {\n        ...UsageGroupFields\n      }\n      byModel {\n        ...UsageGroupFields\n      }\n      byUpstream {\n        ...UsageGroupFields\n      }\n    }\n  }\n": typeof types.OpsHealthDocument,
    "\n  query OpsUsers {\n    users {\n      id\n      email\n      name\n      role\n      twoStepEnabled\n      createdAt\n      account {\n        id\n        name\n      }\n    }\n  }\n": typeof types.OpsUsersDocument,
    "\n  mutation OpsCreateUser($email: String!, $password: String!, $role: UserRole!, $accountId: ID, $name: String) {\n    createUser(email: $email, password: $password, role: $role, accountId: $accountId, name: $name) {\n      id\n    }\n  }\n": typeof types.OpsCreateUserDocument,
    "\n  mutation ChangePassword($currentPassword: String!, $newPassword: String!, $code: String) {\n    changePassword(currentPassword: $currentPassword, newPassword: $newPassword, code: $code)\n  }\n": typeof types.ChangePasswordDocument,
    "\n  mutation RequestEmailVerification($email: String) {\n    requestEmailVerification(email: $email) {\n      email\n      expiresAt\n    }\n  }\n": typeof types.RequestEmailVerificationDocument,
    "\n  mutation VerifyEmail($code: String!) {\n    verifyEmail(code: $code) {\n      id\n      email\n      emailVerified\n    }\n  }\n": typeof types.VerifyEmailDocument,
    "\n  mutation EnrollTotp {\n    enrollTotp {\n      secret\n      uri\n    }\n  }\n": typeof types.EnrollTotpDocument,
    "\n  mutation ConfirmTotp($code: String!) {\n    confirmTotp(code: $code)\n  }\n": typeof types.ConfirmTotpDocument,
    "\n  mutation DisableTotp($code: String!) {\n    disableTotp(code: $code)\n  }\n": typeof types.DisableTotpDocument,
    "\n  mutation RegenerateRecoveryCodes($code: String!) {\n    regenerateRecoveryCodes(code: $code)\n  }\n": typeof types.RegenerateRecoveryCodesDocument,
    "\n  fragment UserFields on User {\n    id\n    email\n    name\n    role\n    emailVerified\n    twoStepEnabled\n    account {\n      id\n      name\n      currency\n      kind\n      status\n      trialPolicy {\n        expiresAt\n        quota\n      }\n    }\n  }\n": typeof types.UserFieldsFragmentDoc,
    "\n  query Me {\n    me {\n      via\n      recoveryCodesLeft\n      user {\n        ...UserFields\n      }\n    }\n  }\n": typeof types.MeDocument,
    "\n  mutation Login($email: String!, $password: String!) {\n    login(email: $email, password: $password) {\n      secondStepRequired\n      user {\n        ...UserFields\n      }\n    }\n  }\n": typeof types.LoginDocument,
    "\n  mutation VerifySecondStep($code: String!) {\n    verifySecondStep(code: $code) {\n      ...UserFields\n    }\n  }\n": typeof types.VerifySecondStepDocument,
    "\n  mutation Logout {\n    logout\n  }\n": typeof types.LogoutDocument,
    "\n  fragment UsageEntryFields on UsageEntry {\n    id\n    requestId\n    startedAt\n    apiKeyId\n    model\n    protocol\n    status\n    errorCode\n    stream\n    promptTokens\n    completionTokens\n    reasoningTokens\n    cachedTokens\n    totalTokens\n    amount\n    latencyMs\n    ttftMs\n    inputTokens\n    cacheWrite5mTokens\n    cacheWrite1hTokens\n    estimated\n    endUser\n    tags\n    dropped\n    prices {\n      input\n      cachedInput\n      cacheWrite5m\n      cacheWrite1h\n      output\n    }\n  }\n": typeof types.UsageEntryFieldsFragmentDoc,
    "\n  query UsageLog($filter: UsageFilter, $first: Int, $after: String) {\n    usage(filter: $filter, first: $first, after: $after) {\n      endCursor\n      hasNextPage\n      nodes {\n        ...UsageEntryFields\n      }\n    }\n  }\n": typeof types.UsageLogDocument,
    "\n  fragment UsageFiguresFields on UsageFigures {\n    requests\n    totalTokens\n    promptTokens\n    completionTokens\n    errors\n    amount\n  }\n": typeof types.UsageFiguresFieldsFragmentDoc,
    "\n  query UsageStats($from: DateTime, $granularity: Granularity, $timeZone: String, $model: String) {\n    usageStats(from: $from, granularity: $granularity, timeZone: $timeZone, model: $model) {\n      total {\n        ...UsageFiguresFields\n      }\n      series {\n        bucket\n        ...UsageFiguresFields\n      }\n      byModel {\n        model\n        ...UsageFiguresFields\n      }\n      byKey {\n        apiKeyId\n        apiKeyName\n        ...UsageFiguresFields\n      }\n    }\n  }\n": typeof types.UsageStatsDocument,
    "\n  query UsageAttribution(\n    $from: DateTime\n    $to: DateTime\n    $apiKeyId: ID\n    $model: String\n    $endUser: String\n    $tag: String\n  ) {\n    usageStats(from: $from, to: $to, apiKeyId: $apiKeyId, model: $model, endUser: $endUser, tag: $tag) {\n      byEndUser {\n        endUser\n        ...UsageFiguresFields\n      }\n      byTag {\n        tag\n        ...UsageFiguresFields\n      }\n    }\n  }\n": typeof types.UsageAttributionDocument,
    "\n  fragment ExportJobFields on Export {\n    id\n    status\n    format\n    rowCount\n    error\n    downloadUrl\n    createdAt\n    finishedAt\n  }\n": typeof types.ExportJobFieldsFragmentDoc,
    "\n  mutation StartExport($format: ExportFormat!, $filter: UsageFilter) {\n    startExport(format: $format, filter: $filter) {\n      ...ExportJobFields\n    }\n  }\n": typeof types.StartExportDocument,
    "\n  query Export($id: ID!) {\n    export(id: $id) {\n      ...ExportJobFields\n    }\n  }\n": typeof types.ExportDocument,
    "\n  query Exports {\n    exports {\n      ...ExportJobFields\n    }\n  }\n": typeof types.ExportsDocument,
    "\n  query Wallet {\n    wallet {\n      balance\n      currency\n      spentToday\n      spentThisMonth\n      keys {\n        spent\n        apiKey {\n          id\n          name\n          prefix\n          state\n        }\n      }\n    }\n  }\n": typeof types.WalletDocument,
    "\n  fragment LedgerEntryFields on LedgerEntry {\n    id\n    createdAt\n    kind\n    amount\n    balanceAfter\n    note\n    requestId\n    apiKeyId\n    batchId\n    calls\n  }\n": typeof types.LedgerEntryFieldsFragmentDoc,
    "\n  query Ledger($first: Int, $after: String) {\n    ledger(first: $first, after: $after) {\n      endCursor\n      hasNextPage\n      nodes {\n        ...LedgerEntryFields\n      }\n    }\n  }\n": typeof types.LedgerDocument,
};
const documents: Documents = {
    "\n  query AuditLog($first: Int, $after: String, $filter: AuditFilter) {\n    auditLog(first: $first, after: $after, filter: $filter) {\n      endCursor\n      hasNextPage\n      nodes {\n        id\n        createdAt\n        actorType\n        actorEmail\n        actorVia\n        actorAddress\n        action\n        accountId\n        subjectType\n        subjectId\n        before\n        after\n      }\n    }\n  }\n": types.AuditLogDocument,
    "\n  mutation StartAuditExport($format: ExportFormat!, $filter: AuditFilter) {\n    startAuditExport(format: $format, filter: $filter) {\n      id\n      status\n    }\n  }\n": types.StartAuditExportDocument,
    "\n  query AuditExport($id: ID!) {\n    export(id: $id) {\n      id\n      status\n      rowCount\n      downloadUrl\n      error\n    }\n  }\n": types.AuditExportDocument,
    "\n  fragment AccountBudgetsFields on Account {\n    id\n    timeZone\n    budgets {\n      ...BudgetFields\n    }\n    budgetCaps {\n      daily\n      weekly\n      monthly\n    }\n  }\n": types.AccountBudgetsFieldsFragmentDoc,
    "\n  query AccountBudgets {\n    account {\n      ...AccountBudgetsFields\n    }\n  }\n": types.AccountBudgetsDocument,
    "\n  mutation SetAccountBudgets($input: BudgetsInput!) {\n    setAccountBudgets(input: $input) {\n      ...AccountBudgetsFields\n    }\n  }\n": types.SetAccountBudgetsDocument,
    "\n  mutation SetAccountTimeZone($timeZone: String!) {\n    setAccountTimeZone(timeZone: $timeZone) {\n      id\n      timeZone\n    }\n  }\n": types.SetAccountTimeZoneDocument,
    "\n  mutation SetApiKeyBudgets($id: ID!, $input: BudgetsInput!) {\n    setApiKeyBudgets(id: $id, input: $input) {\n      id\n      budgets {\n        ...BudgetFields\n      }\n    }\n  }\n": types.SetApiKeyBudgetsDocument,
    "\n  fragment WebhookDeliveryFields on WebhookDelivery {\n    id\n    webhookId\n    kind\n    status\n    attempts\n    lastStatus\n    lastError\n    nextAttemptAt\n    createdAt\n    deliveredAt\n  }\n": types.WebhookDeliveryFieldsFragmentDoc,
    "\n  query AlertOverview {\n    alertSettings {\n      percents\n      balanceBelow\n      keyExpiryDays\n      emails\n      webhooks {\n        id\n        url\n        createdAt\n      }\n    }\n    alertEvents(first: 20) {\n      id\n      kind\n      payload\n      firedAt\n    }\n    webhookDeliveries(first: 20) {\n      ...WebhookDeliveryFields\n    }\n  }\n": types.AlertOverviewDocument,
    "\n  mutation SetAlertSettings($input: AlertSettingsInput!) {\n    setAlertSettings(input: $input) {\n      percents\n      balanceBelow\n      keyExpiryDays\n      emails\n    }\n  }\n": types.SetAlertSettingsDocument,
    "\n  mutation AddAlertWebhook($url: String!) {\n    addAlertWebhook(url: $url) {\n      secret\n      webhook {\n        id\n        url\n      }\n    }\n  }\n": types.AddAlertWebhookDocument,
    "\n  mutation RemoveAlertWebhook($id: ID!) {\n    removeAlertWebhook(id: $id)\n  }\n": types.RemoveAlertWebhookDocument,
    "\n  mutation TestAlertWebhook($id: ID!) {\n    testAlertWebhook(id: $id) {\n      ...WebhookDeliveryFields\n    }\n  }\n": types.TestAlertWebhookDocument,
    "\n  fragment BudgetFields on Budget {\n    period\n    limit\n    spent\n    remaining\n    startsAt\n    resetsAt\n  }\n": types.BudgetFieldsFragmentDoc,
    "\n  fragment ApiKeyFields on ApiKey {\n    id\n    name\n    prefix\n    state\n    status\n    allowedModels\n    ipAllowlist\n    quotaCap\n    spent\n    expiresAt\n    revokedAt\n    lastUsedAt\n    createdAt\n    rpm\n    tpm\n    concurrency\n    budgets {\n      ...BudgetFields\n    }\n  }\n": types.ApiKeyFieldsFragmentDoc,
    "\n  query ApiKeys {\n    apiKeys(includeRevoked: true) {\n      ...ApiKeyFields\n    }\n  }\n": types.ApiKeysDocument,
    "\n  mutation CreateApiKey($input: ApiKeyRestrictionsInput!) {\n    createApiKey(input: $input) {\n      key\n      apiKey {\n        ...ApiKeyFields\n      }\n    }\n  }\n": types.CreateApiKeyDocument,
    "\n  mutation UpdateApiKey($id: ID!, $input: ApiKeyRestrictionsInput!) {\n    updateApiKey(id: $id, input: $input) {\n      ...ApiKeyFields\n    }\n  }\n": types.UpdateApiKeyDocument,
    "\n  mutation RevokeApiKey($id: ID!) {\n    revokeApiKey(id: $id) {\n      ...ApiKeyFields\n    }\n  }\n": types.RevokeApiKeyDocument,
    "\n  fragment CustomerModelFields on CustomerModel {\n    id\n    displayName\n    reasoning\n    inputPrice\n    outputPrice\n    cachedInputPrice\n    contracted\n  }\n": types.CustomerModelFieldsFragmentDoc,
    "\n  query Models {\n    models {\n      ...CustomerModelFields\n    }\n  }\n": types.ModelsDocument,
    "\n  fragment OpsAccountFields on Account {\n    id\n    name\n    email\n    kind\n    status\n    balance\n    currency\n    rpm\n    tpm\n    concurrency\n    createdAt\n    trialPolicy {\n      quota\n      expiresAt\n    }\n  }\n": types.OpsAccountFieldsFragmentDoc,
    "\n  query OpsAccounts($search: String, $first: Int, $offset: Int) {\n    accounts(search: $search, first: $first, offset: $offset) {\n      total\n      nodes {\n        ...OpsAccountFields\n      }\n    }\n  }\n": types.OpsAccountsDocument,
    "\n  fragment InvitationFields on Invitation {\n    id\n    email\n    role\n    expiresAt\n    acceptedAt\n    revokedAt\n  }\n": types.InvitationFieldsFragmentDoc,
    "\n  fragment PriceContractFields on PriceContract {\n    id\n    modelId\n    inputPrice\n    outputPrice\n    cachedInputPrice\n    updatedAt\n  }\n": types.PriceContractFieldsFragmentDoc,
    "\n  query OpsCustomer($id: ID!) {\n    account(accountId: $id) {\n      ...OpsAccountFields\n      members {\n        id\n        email\n        name\n        role\n        twoStepEnabled\n        createdAt\n      }\n      invitations {\n        ...InvitationFields\n      }\n    }\n    priceContracts(accountId: $id) {\n      ...PriceContractFields\n    }\n    catalogModels {\n      id\n    }\n  }\n": types.OpsCustomerDocument,
    "\n  query OpsLedger($id: ID!, $first: Int, $after: String) {\n    ledger(accountId: $id, first: $first, after: $after) {\n      endCursor\n      hasNextPage\n      nodes {\n        ...LedgerEntryFields\n      }\n    }\n  }\n": types.OpsLedgerDocument,
    "\n  mutation OpsCreateCustomer($input: CreateCustomerInput!) {\n    createCustomer(input: $input) {\n      account {\n        id\n        name\n      }\n      owner {\n        id\n      }\n      invitationToken\n    }\n  }\n": types.OpsCreateCustomerDocument,
    "\n  mutation OpsSetStatus($id: ID!, $status: AccountStatus!) {\n    setAccountStatus(accountId: $id, status: $status) {\n      id\n      status\n    }\n  }\n": types.OpsSetStatusDocument,
    "\n  mutation OpsSetLimits($id: ID!, $rpm: Int, $tpm: Int, $concurrency: Int) {\n    setAccountLimits(accountId: $id, rpm: $rpm, tpm: $tpm, concurrency: $concurrency) {\n      id\n      rpm\n      tpm\n      concurrency\n    }\n  }\n": types.OpsSetLimitsDocument,
    "\n  mutation OpsSetTrial($id: ID!, $quota: String!, $expiresAt: DateTime!) {\n    setTrialPolicy(accountId: $id, quota: $quota, expiresAt: $expiresAt) {\n      id\n      trialPolicy {\n        quota\n        expiresAt\n      }\n    }\n  }\n": types.OpsSetTrialDocument,
    "\n  mutation OpsTopUp($id: ID!, $amount: String!, $note: String) {\n    topUp(accountId: $id, amount: $amount, note: $note) {\n      id\n      balance\n    }\n  }\n": types.OpsTopUpDocument,
    "\n  mutation OpsAdjust($id: ID!, $amount: String!, $note: String!) {\n    adjustBalance(accountId: $id, amount: $amount, note: $note) {\n      id\n      balance\n    }\n  }\n": types.OpsAdjustDocument,
    "\n  mutation OpsSetContract($input: PriceContractInput!) {\n    setPriceContract(input: $input) {\n      ...PriceContractFields\n    }\n  }\n": types.OpsSetContractDocument,
    "\n  mutation OpsDeleteContract($id: ID!, $modelId: String!) {\n    deletePriceContract(accountId: $id, modelId: $modelId)\n  }\n": types.OpsDeleteContractDocument,
    "\n  mutation OpsInvite($id: ID, $email: String!, $role: InviteRole) {\n    createInvitation(accountId: $id, email: $email, role: $role) {\n      token\n      invitation {\n        ...InvitationFields\n      }\n    }\n  }\n": types.OpsInviteDocument,
    "\n  mutation OpsRevokeInvitation($id: ID!) {\n    revokeInvitation(id: $id) {\n      id\n      revokedAt\n    }\n  }\n": types.OpsRevokeInvitationDocument,
    "\n  mutation OpsRemoveMember($id: ID!) {\n    removeMember(userId: $id)\n  }\n": types.OpsRemoveMemberDocument,
    "\n  fragment UpstreamFields on Upstream {\n    id\n    name\n    provider\n    protocol\n    baseUrl\n    apiVersion\n    region\n    project\n    auth\n    hasApiKey\n    secretsSet\n    enabled\n    source\n    keys {\n      ...UpstreamKeyFields\n    }\n  }\n": types.UpstreamFieldsFragmentDoc,
    "\n  fragment UpstreamKeyFields on UpstreamKey {\n    id\n    weight\n    state\n    reason\n    disabledAt\n  }\n": types.UpstreamKeyFieldsFragmentDoc,
    "\n  mutation SetUpstreamKeyEnabled($upstream: String!, $key: String!, $enabled: Boolean!) {\n    setUpstreamKeyEnabled(upstream: $upstream, key: $key, enabled: $enabled) {\n      ...UpstreamKeyFields\n    }\n  }\n": types.SetUpstreamKeyEnabledDocument,
    "\n  query OpsCatalog {\n    catalogModels {\n      id\n      displayName\n      enabled\n      reasoning\n      strict\n      fallbacks\n      source\n      inputPrice\n      outputPrice\n      cachedInputPrice\n      routes {\n        id\n        modelId\n        upstreamModel\n        weight\n        priority\n        upstream {\n          id\n          name\n        }\n      }\n    }\n    upstreams {\n      ...UpstreamFields\n    }\n    upstreamProviders {\n      name\n      requiredOptions\n      options\n      secrets\n      needsKey\n    }\n  }\n": types.OpsCatalogDocument,
    "\n  mutation OpsUpsertModel($input: ModelInput!) {\n    upsertModel(input: $input) {\n      id\n    }\n  }\n": types.OpsUpsertModelDocument,
    "\n  mutation OpsDeleteModel($id: String!) {\n    deleteModel(id: $id)\n  }\n": types.OpsDeleteModelDocument,
    "\n  mutation OpsUpsertUpstream($input: UpstreamInput!) {\n    upsertUpstream(input: $input) {\n      id\n      hasApiKey\n    }\n  }\n": types.OpsUpsertUpstreamDocument,
    "\n  mutation OpsDeleteUpstream($id: ID!) {\n    deleteUpstream(id: $id)\n  }\n": types.OpsDeleteUpstreamDocument,
    "\n  mutation OpsUpsertRoute($input: RouteInput!) {\n    upsertRoute(input: $input) {\n      id\n    }\n  }\n": types.OpsUpsertRouteDocument,
    "\n  mutation OpsDeleteRoute($id: ID!) {\n    deleteRoute(id: $id)\n  }\n": types.OpsDeleteRouteDocument,
    "\n  fragment UsageGroupFields on UsageGroup {\n    key\n    label\n    ...UsageFiguresFields\n  }\n": types.UsageGroupFieldsFragmentDoc,
    "\n  query OpsHealth($minutes: Int, $from: DateTime, $to: DateTime) {\n    upstreamHealth(minutes: $minutes) {\n      id\n      name\n      enabled\n      breaker\n      requests\n      errors\n      errorRate\n      latencyAvgMs\n      latencyP95Ms\n      ttftAvgMs\n      ttftP95Ms\n      lastCallAt\n      keys {\n        ...UpstreamKeyFields\n        breaker\n      }\n    }\n    operatorUsage(from: $from, to: $to) {\n      byAccount {\n        ...UsageGroupFields\n      }\n      byModel {\n        ...UsageGroupFields\n      }\n      byUpstream {\n        ...UsageGroupFields\n      }\n    }\n  }\n": types.OpsHealthDocument,
    "\n  query OpsUsers {\n    users {\n      id\n      email\n      name\n      role\n      twoStepEnabled\n      createdAt\n      account {\n        id\n        name\n      }\n    }\n  }\n": types.OpsUsersDocument,
    "\n  mutation OpsCreateUser($email: String!, $password: String!, $role: UserRole!, $accountId: ID, $name: String) {\n    createUser(email: $email, password: $password, role: $role, accountId: $accountId, name: $name) {\n      id\n    }\n  }\n": types.OpsCreateUserDocument,
    "\n  mutation ChangePassword($currentPassword: String!, $newPassword: String!, $code: String) {\n    changePassword(currentPassword: $currentPassword, newPassword: $newPassword, code: $code)\n  }\n": types.ChangePasswordDocument,
    "\n  mutation RequestEmailVerification($email: String) {\n    requestEmailVerification(email: $email) {\n      email\n      expiresAt\n    }\n  }\n": types.RequestEmailVerificationDocument,
    "\n  mutation VerifyEmail($code: String!) {\n    verifyEmail(code: $code) {\n      id\n      email\n      emailVerified\n    }\n  }\n": types.VerifyEmailDocument,
    "\n  mutation EnrollTotp {\n    enrollTotp {\n      secret\n      uri\n    }\n  }\n": types.EnrollTotpDocument,
    "\n  mutation ConfirmTotp($code: String!) {\n    confirmTotp(code: $code)\n  }\n": types.ConfirmTotpDocument,
    "\n  mutation DisableTotp($code: String!) {\n    disableTotp(code: $code)\n  }\n": types.DisableTotpDocument,
    "\n  mutation RegenerateRecoveryCodes($code: String!) {\n    regenerateRecoveryCodes(code: $code)\n  }\n": types.RegenerateRecoveryCodesDocument,
    "\n  fragment UserFields on User {\n    id\n    email\n    name\n    role\n    emailVerified\n    twoStepEnabled\n    account {\n      id\n      name\n      currency\n      kind\n      status\n      trialPolicy {\n        expiresAt\n        quota\n      }\n    }\n  }\n": types.UserFieldsFragmentDoc,
    "\n  query Me {\n    me {\n      via\n      recoveryCodesLeft\n      user {\n        ...UserFields\n      }\n    }\n  }\n": types.MeDocument,
    "\n  mutation Login($email: String!, $password: String!) {\n    login(email: $email, password: $password) {\n      secondStepRequired\n      user {\n        ...UserFields\n      }\n    }\n  }\n": types.LoginDocument,
    "\n  mutation VerifySecondStep($code: String!) {\n    verifySecondStep(code: $code) {\n      ...UserFields\n    }\n  }\n": types.VerifySecondStepDocument,
    "\n  mutation Logout {\n    logout\n  }\n": types.LogoutDocument,
    "\n  fragment UsageEntryFields on UsageEntry {\n    id\n    requestId\n    startedAt\n    apiKeyId\n    model\n    protocol\n    status\n    errorCode\n    stream\n    promptTokens\n    completionTokens\n    reasoningTokens\n    cachedTokens\n    totalTokens\n    amount\n    latencyMs\n    ttftMs\n    inputTokens\n    cacheWrite5mTokens\n    cacheWrite1hTokens\n    estimated\n    endUser\n    tags\n    dropped\n    prices {\n      input\n      cachedInput\n      cacheWrite5m\n      cacheWrite1h\n      output\n    }\n  }\n": types.UsageEntryFieldsFragmentDoc,
    "\n  query UsageLog($filter: UsageFilter, $first: Int, $after: String) {\n    usage(filter: $filter, first: $first, after: $after) {\n      endCursor\n      hasNextPage\n      nodes {\n        ...UsageEntryFields\n      }\n    }\n  }\n": types.UsageLogDocument,
    "\n  fragment UsageFiguresFields on UsageFigures {\n    requests\n    totalTokens\n    promptTokens\n    completionTokens\n    errors\n    amount\n  }\n": types.UsageFiguresFieldsFragmentDoc,
    "\n  query UsageStats($from: DateTime, $granularity: Granularity, $timeZone: String, $model: String) {\n    usageStats(from: $from, granularity: $granularity, timeZone: $timeZone, model: $model) {\n      total {\n        ...UsageFiguresFields\n      }\n      series {\n        bucket\n        ...UsageFiguresFields\n      }\n      byModel {\n        model\n        ...UsageFiguresFields\n      }\n      byKey {\n        apiKeyId\n        apiKeyName\n        ...UsageFiguresFields\n      }\n    }\n  }\n": types.UsageStatsDocument,
    "\n  query UsageAttribution(\n    $from: DateTime\n    $to: DateTime\n    $apiKeyId: ID\n    $model: String\n    $endUser: String\n    $tag: String\n  ) {\n    usageStats(from: $from, to: $to, apiKeyId: $apiKeyId, model: $model, endUser: $endUser, tag: $tag) {\n      byEndUser {\n        endUser\n        ...UsageFiguresFields\n      }\n      byTag {\n        tag\n        ...UsageFiguresFields\n      }\n    }\n  }\n": types.UsageAttributionDocument,
    "\n  fragment ExportJobFields on Export {\n    id\n    status\n    format\n    rowCount\n    error\n    downloadUrl\n    createdAt\n    finishedAt\n  }\n": types.ExportJobFieldsFragmentDoc,
    "\n  mutation StartExport($format: ExportFormat!, $filter: UsageFilter) {\n    startExport(format: $format, filter: $filter) {\n      ...ExportJobFields\n    }\n  }\n": types.StartExportDocument,
    "\n  query Export($id: ID!) {\n    export(id: $id) {\n      ...ExportJobFields\n    }\n  }\n": types.ExportDocument,
    "\n  query Exports {\n    exports {\n      ...ExportJobFields\n    }\n  }\n": types.ExportsDocument,
    "\n  query Wallet {\n    wallet {\n      balance\n      currency\n      spentToday\n      spentThisMonth\n      keys {\n        spent\n        apiKey {\n          id\n          name\n          prefix\n          state\n        }\n      }\n    }\n  }\n": types.WalletDocument,
    "\n  fragment LedgerEntryFields on LedgerEntry {\n    id\n    createdAt\n    kind\n    amount\n    balanceAfter\n    note\n    requestId\n    apiKeyId\n    batchId\n    calls\n  }\n": types.LedgerEntryFieldsFragmentDoc,
    "\n  query Ledger($first: Int, $after: String) {\n    ledger(first: $first, after: $after) {\n      endCursor\n      hasNextPage\n      nodes {\n        ...LedgerEntryFields\n      }\n    }\n  }\n": types.LedgerDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 *
 *
 * @example
 * ```ts
 * const query = graphql(`query GetUser($id: ID!) { user(id: $id) { name } }`);
 * ```
 *
 * The query argument is unknown!
 * Please regenerate the types.
 */
export function graphql(source: string): unknown;

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query AuditLog($first: Int, $after: String, $filter: AuditFilter) {\n    auditLog(first: $first, after: $after, filter: $filter) {\n      endCursor\n      hasNextPage\n      nodes {\n        id\n        createdAt\n        actorType\n        actorEmail\n        actorVia\n        actorAddress\n        action\n        accountId\n        subjectType\n        subjectId\n        before\n        after\n      }\n    }\n  }\n"): (typeof documents)["\n  query AuditLog($first: Int, $after: String, $filter: AuditFilter) {\n    auditLog(first: $first, after: $after, filter: $filter) {\n      endCursor\n      hasNextPage\n      nodes {\n        id\n        createdAt\n        actorType\n        actorEmail\n        actorVia\n        actorAddress\n        action\n        accountId\n        subjectType\n        subjectId\n        before\n        after\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation StartAuditExport($format: ExportFormat!, $filter: AuditFilter) {\n    startAuditExport(format: $format, filter: $filter) {\n      id\n      status\n    }\n  }\n"): (typeof documents)["\n  mutation StartAuditExport($format: ExportFormat!, $filter: AuditFilter) {\n    startAuditExport(format: $format, filter: $filter) {\n      id\n      status\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query AuditExport($id: ID!) {\n    export(id: $id) {\n      id\n      status\n      rowCount\n      downloadUrl\n      error\n    }\n  }\n"): (typeof documents)["\n  query AuditExport($id: ID!) {\n    export(id: $id) {\n      id\n      status\n      rowCount\n      downloadUrl\n      error\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment AccountBudgetsFields on Account {\n    id\n    timeZone\n    budgets {\n      ...BudgetFields\n    }\n    budgetCaps {\n      daily\n      weekly\n      monthly\n    }\n  }\n"): (typeof documents)["\n  fragment AccountBudgetsFields on Account {\n    id\n    timeZone\n    budgets {\n      ...BudgetFields\n    }\n    budgetCaps {\n      daily\n      weekly\n      monthly\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query AccountBudgets {\n    account {\n      ...AccountBudgetsFields\n    }\n  }\n"): (typeof documents)["\n  query AccountBudgets {\n    account {\n      ...AccountBudgetsFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SetAccountBudgets($input: BudgetsInput!) {\n    setAccountBudgets(input: $input) {\n      ...AccountBudgetsFields\n    }\n  }\n"): (typeof documents)["\n  mutation SetAccountBudgets($input: BudgetsInput!) {\n    setAccountBudgets(input: $input) {\n      ...AccountBudgetsFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SetAccountTimeZone($timeZone: String!) {\n    setAccountTimeZone(timeZone: $timeZone) {\n      id\n      timeZone\n    }\n  }\n"): (typeof documents)["\n  mutation SetAccountTimeZone($timeZone: String!) {\n    setAccountTimeZone(timeZone: $timeZone) {\n      id\n      timeZone\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SetApiKeyBudgets($id: ID!, $input: BudgetsInput!) {\n    setApiKeyBudgets(id: $id, input: $input) {\n      id\n      budgets {\n        ...BudgetFields\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation SetApiKeyBudgets($id: ID!, $input: BudgetsInput!) {\n    setApiKeyBudgets(id: $id, input: $input) {\n      id\n      budgets {\n        ...BudgetFields\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment WebhookDeliveryFields on WebhookDelivery {\n    id\n    webhookId\n    kind\n    status\n    attempts\n    lastStatus\n    lastError\n    nextAttemptAt\n    createdAt\n    deliveredAt\n  }\n"): (typeof documents)["\n  fragment WebhookDeliveryFields on WebhookDelivery {\n    id\n    webhookId\n    kind\n    status\n    attempts\n    lastStatus\n    lastError\n    nextAttemptAt\n    createdAt\n    deliveredAt\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query AlertOverview {\n    alertSettings {\n      percents\n      balanceBelow\n      keyExpiryDays\n      emails\n      webhooks {\n        id\n        url\n        createdAt\n      }\n    }\n    alertEvents(first: 20) {\n      id\n      kind\n      payload\n      firedAt\n    }\n    webhookDeliveries(first: 20) {\n      ...WebhookDeliveryFields\n    }\n  }\n"): (typeof documents)["\n  query AlertOverview {\n    alertSettings {\n      percents\n      balanceBelow\n      keyExpiryDays\n      emails\n      webhooks {\n        id\n        url\n        createdAt\n      }\n    }\n    alertEvents(first: 20) {\n      id\n      kind\n      payload\n      firedAt\n    }\n    webhookDeliveries(first: 20) {\n      ...WebhookDeliveryFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SetAlertSettings($input: AlertSettingsInput!) {\n    setAlertSettings(input: $input) {\n      percents\n      balanceBelow\n      keyExpiryDays\n      emails\n    }\n  }\n"): (typeof documents)["\n  mutation SetAlertSettings($input: AlertSettingsInput!) {\n    setAlertSettings(input: $input) {\n      percents\n      balanceBelow\n      keyExpiryDays\n      emails\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AddAlertWebhook($url: String!) {\n    addAlertWebhook(url: $url) {\n      secret\n      webhook {\n        id\n        url\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation AddAlertWebhook($url: String!) {\n    addAlertWebhook(url: $url) {\n      secret\n      webhook {\n        id\n        url\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RemoveAlertWebhook($id: ID!) {\n    removeAlertWebhook(id: $id)\n  }\n"): (typeof documents)["\n  mutation RemoveAlertWebhook($id: ID!) {\n    removeAlertWebhook(id: $id)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation TestAlertWebhook($id: ID!) {\n    testAlertWebhook(id: $id) {\n      ...WebhookDeliveryFields\n    }\n  }\n"): (typeof documents)["\n  mutation TestAlertWebhook($id: ID!) {\n    testAlertWebhook(id: $id) {\n      ...WebhookDeliveryFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment BudgetFields on Budget {\n    period\n    limit\n    spent\n    remaining\n    startsAt\n    resetsAt\n  }\n"): (typeof documents)["\n  fragment BudgetFields on Budget {\n    period\n    limit\n    spent\n    remaining\n    startsAt\n    resetsAt\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment ApiKeyFields on ApiKey {\n    id\n    name\n    prefix\n    state\n    status\n    allowedModels\n    ipAllowlist\n    quotaCap\n    spent\n    expiresAt\n    revokedAt\n    lastUsedAt\n    createdAt\n    rpm\n    tpm\n    concurrency\n    budgets {\n      ...BudgetFields\n    }\n  }\n"): (typeof documents)["\n  fragment ApiKeyFields on ApiKey {\n    id\n    name\n    prefix\n    state\n    status\n    allowedModels\n    ipAllowlist\n    quotaCap\n    spent\n    expiresAt\n    revokedAt\n    lastUsedAt\n    createdAt\n    rpm\n    tpm\n    concurrency\n    budgets {\n      ...BudgetFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ApiKeys {\n    apiKeys(includeRevoked: true) {\n      ...ApiKeyFields\n    }\n  }\n"): (typeof documents)["\n  query ApiKeys {\n    apiKeys(includeRevoked: true) {\n      ...ApiKeyFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation CreateApiKey($input: ApiKeyRestrictionsInput!) {\n    createApiKey(input: $input) {\n      key\n      apiKey {\n        ...ApiKeyFields\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation CreateApiKey($input: ApiKeyRestrictionsInput!) {\n    createApiKey(input: $input) {\n      key\n      apiKey {\n        ...ApiKeyFields\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation UpdateApiKey($id: ID!, $input: ApiKeyRestrictionsInput!) {\n    updateApiKey(id: $id, input: $input) {\n      ...ApiKeyFields\n    }\n  }\n"): (typeof documents)["\n  mutation UpdateApiKey($id: ID!, $input: ApiKeyRestrictionsInput!) {\n    updateApiKey(id: $id, input: $input) {\n      ...ApiKeyFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RevokeApiKey($id: ID!) {\n    revokeApiKey(id: $id) {\n      ...ApiKeyFields\n    }\n  }\n"): (typeof documents)["\n  mutation RevokeApiKey($id: ID!) {\n    revokeApiKey(id: $id) {\n      ...ApiKeyFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment CustomerModelFields on CustomerModel {\n    id\n    displayName\n    reasoning\n    inputPrice\n    outputPrice\n    cachedInputPrice\n    contracted\n  }\n"): (typeof documents)["\n  fragment CustomerModelFields on CustomerModel {\n    id\n    displayName\n    reasoning\n    inputPrice\n    outputPrice\n    cachedInputPrice\n    contracted\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Models {\n    models {\n      ...CustomerModelFields\n    }\n  }\n"): (typeof documents)["\n  query Models {\n    models {\n      ...CustomerModelFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment OpsAccountFields on Account {\n    id\n    name\n    email\n    kind\n    status\n    balance\n    currency\n    rpm\n    tpm\n    concurrency\n    createdAt\n    trialPolicy {\n      quota\n      expiresAt\n    }\n  }\n"): (typeof documents)["\n  fragment OpsAccountFields on Account {\n    id\n    name\n    email\n    kind\n    status\n    balance\n    currency\n    rpm\n    tpm\n    concurrency\n    createdAt\n    trialPolicy {\n      quota\n      expiresAt\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query OpsAccounts($search: String, $first: Int, $offset: Int) {\n    accounts(search: $search, first: $first, offset: $offset) {\n      total\n      nodes {\n        ...OpsAccountFields\n      }\n    }\n  }\n"): (typeof documents)["\n  query OpsAccounts($search: String, $first: Int, $offset: Int) {\n    accounts(search: $search, first: $first, offset: $offset) {\n      total\n      nodes {\n        ...OpsAccountFields\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment InvitationFields on Invitation {\n    id\n    email\n    role\n    expiresAt\n    acceptedAt\n    revokedAt\n  }\n"): (typeof documents)["\n  fragment InvitationFields on Invitation {\n    id\n    email\n    role\n    expiresAt\n    acceptedAt\n    revokedAt\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment PriceContractFields on PriceContract {\n    id\n    modelId\n    inputPrice\n    outputPrice\n    cachedInputPrice\n    updatedAt\n  }\n"): (typeof documents)["\n  fragment PriceContractFields on PriceContract {\n    id\n    modelId\n    inputPrice\n    outputPrice\n    cachedInputPrice\n    updatedAt\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query OpsCustomer($id: ID!) {\n    account(accountId: $id) {\n      ...OpsAccountFields\n      members {\n        id\n        email\n        name\n        role\n        twoStepEnabled\n        createdAt\n      }\n      invitations {\n        ...InvitationFields\n      }\n    }\n    priceContracts(accountId: $id) {\n      ...PriceContractFields\n    }\n    catalogModels {\n      id\n    }\n  }\n"): (typeof documents)["\n  query OpsCustomer($id: ID!) {\n    account(accountId: $id) {\n      ...OpsAccountFields\n      members {\n        id\n        email\n        name\n        role\n        twoStepEnabled\n        createdAt\n      }\n      invitations {\n        ...InvitationFields\n      }\n    }\n    priceContracts(accountId: $id) {\n      ...PriceContractFields\n    }\n    catalogModels {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query OpsLedger($id: ID!, $first: Int, $after: String) {\n    ledger(accountId: $id, first: $first, after: $after) {\n      endCursor\n      hasNextPage\n      nodes {\n        ...LedgerEntryFields\n      }\n    }\n  }\n"): (typeof documents)["\n  query OpsLedger($id: ID!, $first: Int, $after: String) {\n    ledger(accountId: $id, first: $first, after: $after) {\n      endCursor\n      hasNextPage\n      nodes {\n        ...LedgerEntryFields\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsCreateCustomer($input: CreateCustomerInput!) {\n    createCustomer(input: $input) {\n      account {\n        id\n        name\n      }\n      owner {\n        id\n      }\n      invitationToken\n    }\n  }\n"): (typeof documents)["\n  mutation OpsCreateCustomer($input: CreateCustomerInput!) {\n    createCustomer(input: $input) {\n      account {\n        id\n        name\n      }\n      owner {\n        id\n      }\n      invitationToken\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsSetStatus($id: ID!, $status: AccountStatus!) {\n    setAccountStatus(accountId: $id, status: $status) {\n      id\n      status\n    }\n  }\n"): (typeof documents)["\n  mutation OpsSetStatus($id: ID!, $status: AccountStatus!) {\n    setAccountStatus(accountId: $id, status: $status) {\n      id\n      status\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsSetLimits($id: ID!, $rpm: Int, $tpm: Int, $concurrency: Int) {\n    setAccountLimits(accountId: $id, rpm: $rpm, tpm: $tpm, concurrency: $concurrency) {\n      id\n      rpm\n      tpm\n      concurrency\n    }\n  }\n"): (typeof documents)["\n  mutation OpsSetLimits($id: ID!, $rpm: Int, $tpm: Int, $concurrency: Int) {\n    setAccountLimits(accountId: $id, rpm: $rpm, tpm: $tpm, concurrency: $concurrency) {\n      id\n      rpm\n      tpm\n      concurrency\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsSetTrial($id: ID!, $quota: String!, $expiresAt: DateTime!) {\n    setTrialPolicy(accountId: $id, quota: $quota, expiresAt: $expiresAt) {\n      id\n      trialPolicy {\n        quota\n        expiresAt\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation OpsSetTrial($id: ID!, $quota: String!, $expiresAt: DateTime!) {\n    setTrialPolicy(accountId: $id, quota: $quota, expiresAt: $expiresAt) {\n      id\n      trialPolicy {\n        quota\n        expiresAt\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsTopUp($id: ID!, $amount: String!, $note: String) {\n    topUp(accountId: $id, amount: $amount, note: $note) {\n      id\n      balance\n    }\n  }\n"): (typeof documents)["\n  mutation OpsTopUp($id: ID!, $amount: String!, $note: String) {\n    topUp(accountId: $id, amount: $amount, note: $note) {\n      id\n      balance\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsAdjust($id: ID!, $amount: String!, $note: String!) {\n    adjustBalance(accountId: $id, amount: $amount, note: $note) {\n      id\n      balance\n    }\n  }\n"): (typeof documents)["\n  mutation OpsAdjust($id: ID!, $amount: String!, $note: String!) {\n    adjustBalance(accountId: $id, amount: $amount, note: $note) {\n      id\n      balance\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsSetContract($input: PriceContractInput!) {\n    setPriceContract(input: $input) {\n      ...PriceContractFields\n    }\n  }\n"): (typeof documents)["\n  mutation OpsSetContract($input: PriceContractInput!) {\n    setPriceContract(input: $input) {\n      ...PriceContractFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsDeleteContract($id: ID!, $modelId: String!) {\n    deletePriceContract(accountId: $id, modelId: $modelId)\n  }\n"): (typeof documents)["\n  mutation OpsDeleteContract($id: ID!, $modelId: String!) {\n    deletePriceContract(accountId: $id, modelId: $modelId)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsInvite($id: ID, $email: String!, $role: InviteRole) {\n    createInvitation(accountId: $id, email: $email, role: $role) {\n      token\n      invitation {\n        ...InvitationFields\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation OpsInvite($id: ID, $email: String!, $role: InviteRole) {\n    createInvitation(accountId: $id, email: $email, role: $role) {\n      token\n      invitation {\n        ...InvitationFields\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsRevokeInvitation($id: ID!) {\n    revokeInvitation(id: $id) {\n      id\n      revokedAt\n    }\n  }\n"): (typeof documents)["\n  mutation OpsRevokeInvitation($id: ID!) {\n    revokeInvitation(id: $id) {\n      id\n      revokedAt\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsRemoveMember($id: ID!) {\n    removeMember(userId: $id)\n  }\n"): (typeof documents)["\n  mutation OpsRemoveMember($id: ID!) {\n    removeMember(userId: $id)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment UpstreamFields on Upstream {\n    id\n    name\n    provider\n    protocol\n    baseUrl\n    apiVersion\n    region\n    project\n    auth\n    hasApiKey\n    secretsSet\n    enabled\n    source\n    keys {\n      ...UpstreamKeyFields\n    }\n  }\n"): (typeof documents)["\n  fragment UpstreamFields on Upstream {\n    id\n    name\n    provider\n    protocol\n    baseUrl\n    apiVersion\n    region\n    project\n    auth\n    hasApiKey\n    secretsSet\n    enabled\n    source\n    keys {\n      ...UpstreamKeyFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment UpstreamKeyFields on UpstreamKey {\n    id\n    weight\n    state\n    reason\n    disabledAt\n  }\n"): (typeof documents)["\n  fragment UpstreamKeyFields on UpstreamKey {\n    id\n    weight\n    state\n    reason\n    disabledAt\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SetUpstreamKeyEnabled($upstream: String!, $key: String!, $enabled: Boolean!) {\n    setUpstreamKeyEnabled(upstream: $upstream, key: $key, enabled: $enabled) {\n      ...UpstreamKeyFields\n    }\n  }\n"): (typeof documents)["\n  mutation SetUpstreamKeyEnabled($upstream: String!, $key: String!, $enabled: Boolean!) {\n    setUpstreamKeyEnabled(upstream: $upstream, key: $key, enabled: $enabled) {\n      ...UpstreamKeyFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query OpsCatalog {\n    catalogModels {\n      id\n      displayName\n      enabled\n      reasoning\n      strict\n      fallbacks\n      source\n      inputPrice\n      outputPrice\n      cachedInputPrice\n      routes {\n        id\n        modelId\n        upstreamModel\n        weight\n        priority\n        upstream {\n          id\n          name\n        }\n      }\n    }\n    upstreams {\n      ...UpstreamFields\n    }\n    upstreamProviders {\n      name\n      requiredOptions\n      options\n      secrets\n      needsKey\n    }\n  }\n"): (typeof documents)["\n  query OpsCatalog {\n    catalogModels {\n      id\n      displayName\n      enabled\n      reasoning\n      strict\n      fallbacks\n      source\n      inputPrice\n      outputPrice\n      cachedInputPrice\n      routes {\n        id\n        modelId\n        upstreamModel\n        weight\n        priority\n        upstream {\n          id\n          name\n        }\n      }\n    }\n    upstreams {\n      ...UpstreamFields\n    }\n    upstreamProviders {\n      name\n      requiredOptions\n      options\n      secrets\n      needsKey\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsUpsertModel($input: ModelInput!) {\n    upsertModel(input: $input) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation OpsUpsertModel($input: ModelInput!) {\n    upsertModel(input: $input) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsDeleteModel($id: String!) {\n    deleteModel(id: $id)\n  }\n"): (typeof documents)["\n  mutation OpsDeleteModel($id: String!) {\n    deleteModel(id: $id)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsUpsertUpstream($input: UpstreamInput!) {\n    upsertUpstream(input: $input) {\n      id\n      hasApiKey\n    }\n  }\n"): (typeof documents)["\n  mutation OpsUpsertUpstream($input: UpstreamInput!) {\n    upsertUpstream(input: $input) {\n      id\n      hasApiKey\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsDeleteUpstream($id: ID!) {\n    deleteUpstream(id: $id)\n  }\n"): (typeof documents)["\n  mutation OpsDeleteUpstream($id: ID!) {\n    deleteUpstream(id: $id)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsUpsertRoute($input: RouteInput!) {\n    upsertRoute(input: $input) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation OpsUpsertRoute($input: RouteInput!) {\n    upsertRoute(input: $input) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsDeleteRoute($id: ID!) {\n    deleteRoute(id: $id)\n  }\n"): (typeof documents)["\n  mutation OpsDeleteRoute($id: ID!) {\n    deleteRoute(id: $id)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment UsageGroupFields on UsageGroup {\n    key\n    label\n    ...UsageFiguresFields\n  }\n"): (typeof documents)["\n  fragment UsageGroupFields on UsageGroup {\n    key\n    label\n    ...UsageFiguresFields\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query OpsHealth($minutes: Int, $from: DateTime, $to: DateTime) {\n    upstreamHealth(minutes: $minutes) {\n      id\n      name\n      enabled\n      breaker\n      requests\n      errors\n      errorRate\n      latencyAvgMs\n      latencyP95Ms\n      ttftAvgMs\n      ttftP95Ms\n      lastCallAt\n      keys {\n        ...UpstreamKeyFields\n        breaker\n      }\n    }\n    operatorUsage(from: $from, to: $to) {\n      byAccount {\n        ...UsageGroupFields\n      }\n      byModel {\n        ...UsageGroupFields\n      }\n      byUpstream {\n        ...UsageGroupFields\n      }\n    }\n  }\n"): (typeof documents)["\n  query OpsHealth($minutes: Int, $from: DateTime, $to: DateTime) {\n    upstreamHealth(minutes: $minutes) {\n      id\n      name\n      enabled\n      breaker\n      requests\n      errors\n      errorRate\n      latencyAvgMs\n      latencyP95Ms\n      ttftAvgMs\n      ttftP95Ms\n      lastCallAt\n      keys {\n        ...UpstreamKeyFields\n        breaker\n      }\n    }\n    operatorUsage(from: $from, to: $to) {\n      byAccount {\n        ...UsageGroupFields\n      }\n      byModel {\n        ...UsageGroupFields\n      }\n      byUpstream {\n        ...UsageGroupFields\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query OpsUsers {\n    users {\n      id\n      email\n      name\n      role\n      twoStepEnabled\n      createdAt\n      account {\n        id\n        name\n      }\n    }\n  }\n"): (typeof documents)["\n  query OpsUsers {\n    users {\n      id\n      email\n      name\n      role\n      twoStepEnabled\n      createdAt\n      account {\n        id\n        name\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation OpsCreateUser($email: String!, $password: String!, $role: UserRole!, $accountId: ID, $name: String) {\n    createUser(email: $email, password: $password, role: $role, accountId: $accountId, name: $name) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation OpsCreateUser($email: String!, $password: String!, $role: UserRole!, $accountId: ID, $name: String) {\n    createUser(email: $email, password: $password, role: $role, accountId: $accountId, name: $name) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ChangePassword($currentPassword: String!, $newPassword: String!, $code: String) {\n    changePassword(currentPassword: $currentPassword, newPassword: $newPassword, code: $code)\n  }\n"): (typeof documents)["\n  mutation ChangePassword($currentPassword: String!, $newPassword: String!, $code: String) {\n    changePassword(currentPassword: $currentPassword, newPassword: $newPassword, code: $code)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RequestEmailVerification($email: String) {\n    requestEmailVerification(email: $email) {\n      email\n      expiresAt\n    }\n  }\n"): (typeof documents)["\n  mutation RequestEmailVerification($email: String) {\n    requestEmailVerification(email: $email) {\n      email\n      expiresAt\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation VerifyEmail($code: String!) {\n    verifyEmail(code: $code) {\n      id\n      email\n      emailVerified\n    }\n  }\n"): (typeof documents)["\n  mutation VerifyEmail($code: String!) {\n    verifyEmail(code: $code) {\n      id\n      email\n      emailVerified\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation EnrollTotp {\n    enrollTotp {\n      secret\n      uri\n    }\n  }\n"): (typeof documents)["\n  mutation EnrollTotp {\n    enrollTotp {\n      secret\n      uri\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ConfirmTotp($code: String!) {\n    confirmTotp(code: $code)\n  }\n"): (typeof documents)["\n  mutation ConfirmTotp($code: String!) {\n    confirmTotp(code: $code)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation DisableTotp($code: String!) {\n    disableTotp(code: $code)\n  }\n"): (typeof documents)["\n  mutation DisableTotp($code: String!) {\n    disableTotp(code: $code)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RegenerateRecoveryCodes($code: String!) {\n    regenerateRecoveryCodes(code: $code)\n  }\n"): (typeof documents)["\n  mutation RegenerateRecoveryCodes($code: String!) {\n    regenerateRecoveryCodes(code: $code)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment UserFields on User {\n    id\n    email\n    name\n    role\n    emailVerified\n    twoStepEnabled\n    account {\n      id\n      name\n      currency\n      kind\n      status\n      trialPolicy {\n        expiresAt\n        quota\n      }\n    }\n  }\n"): (typeof documents)["\n  fragment UserFields on User {\n    id\n    email\n    name\n    role\n    emailVerified\n    twoStepEnabled\n    account {\n      id\n      name\n      currency\n      kind\n      status\n      trialPolicy {\n        expiresAt\n        quota\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Me {\n    me {\n      via\n      recoveryCodesLeft\n      user {\n        ...UserFields\n      }\n    }\n  }\n"): (typeof documents)["\n  query Me {\n    me {\n      via\n      recoveryCodesLeft\n      user {\n        ...UserFields\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation Login($email: String!, $password: String!) {\n    login(email: $email, password: $password) {\n      secondStepRequired\n      user {\n        ...UserFields\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation Login($email: String!, $password: String!) {\n    login(email: $email, password: $password) {\n      secondStepRequired\n      user {\n        ...UserFields\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation VerifySecondStep($code: String!) {\n    verifySecondStep(code: $code) {\n      ...UserFields\n    }\n  }\n"): (typeof documents)["\n  mutation VerifySecondStep($code: String!) {\n    verifySecondStep(code: $code) {\n      ...UserFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation Logout {\n    logout\n  }\n"): (typeof documents)["\n  mutation Logout {\n    logout\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment UsageEntryFields on UsageEntry {\n    id\n    requestId\n    startedAt\n    apiKeyId\n    model\n    protocol\n    status\n    errorCode\n    stream\n    promptTokens\n    completionTokens\n    reasoningTokens\n    cachedTokens\n    totalTokens\n    amount\n    latencyMs\n    ttftMs\n    inputTokens\n    cacheWrite5mTokens\n    cacheWrite1hTokens\n    estimated\n    endUser\n    tags\n    dropped\n    prices {\n      input\n      cachedInput\n      cacheWrite5m\n      cacheWrite1h\n      output\n    }\n  }\n"): (typeof documents)["\n  fragment UsageEntryFields on UsageEntry {\n    id\n    requestId\n    startedAt\n    apiKeyId\n    model\n    protocol\n    status\n    errorCode\n    stream\n    promptTokens\n    completionTokens\n    reasoningTokens\n    cachedTokens\n    totalTokens\n    amount\n    latencyMs\n    ttftMs\n    inputTokens\n    cacheWrite5mTokens\n    cacheWrite1hTokens\n    estimated\n    endUser\n    tags\n    dropped\n    prices {\n      input\n      cachedInput\n      cacheWrite5m\n      cacheWrite1h\n      output\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query UsageLog($filter: UsageFilter, $first: Int, $after: String) {\n    usage(filter: $filter, first: $first, after: $after) {\n      endCursor\n      hasNextPage\n      nodes {\n        ...UsageEntryFields\n      }\n    }\n  }\n"): (typeof documents)["\n  query UsageLog($filter: UsageFilter, $first: Int, $after: String) {\n    usage(filter: $filter, first: $first, after: $after) {\n      endCursor\n      hasNextPage\n      nodes {\n        ...UsageEntryFields\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment UsageFiguresFields on UsageFigures {\n    requests\n    totalTokens\n    promptTokens\n    completionTokens\n    errors\n    amount\n  }\n"): (typeof documents)["\n  fragment UsageFiguresFields on UsageFigures {\n    requests\n    totalTokens\n    promptTokens\n    completionTokens\n    errors\n    amount\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query UsageStats($from: DateTime, $granularity: Granularity, $timeZone: String, $model: String) {\n    usageStats(from: $from, granularity: $granularity, timeZone: $timeZone, model: $model) {\n      total {\n        ...UsageFiguresFields\n      }\n      series {\n        bucket\n        ...UsageFiguresFields\n      }\n      byModel {\n        model\n        ...UsageFiguresFields\n      }\n      byKey {\n        apiKeyId\n        apiKeyName\n        ...UsageFiguresFields\n      }\n    }\n  }\n"): (typeof documents)["\n  query UsageStats($from: DateTime, $granularity: Granularity, $timeZone: String, $model: String) {\n    usageStats(from: $from, granularity: $granularity, timeZone: $timeZone, model: $model) {\n      total {\n        ...UsageFiguresFields\n      }\n      series {\n        bucket\n        ...UsageFiguresFields\n      }\n      byModel {\n        model\n        ...UsageFiguresFields\n      }\n      byKey {\n        apiKeyId\n        apiKeyName\n        ...UsageFiguresFields\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query UsageAttribution(\n    $from: DateTime\n    $to: DateTime\n    $apiKeyId: ID\n    $model: String\n    $endUser: String\n    $tag: String\n  ) {\n    usageStats(from: $from, to: $to, apiKeyId: $apiKeyId, model: $model, endUser: $endUser, tag: $tag) {\n      byEndUser {\n        endUser\n        ...UsageFiguresFields\n      }\n      byTag {\n        tag\n        ...UsageFiguresFields\n      }\n    }\n  }\n"): (typeof documents)["\n  query UsageAttribution(\n    $from: DateTime\n    $to: DateTime\n    $apiKeyId: ID\n    $model: String\n    $endUser: String\n    $tag: String\n  ) {\n    usageStats(from: $from, to: $to, apiKeyId: $apiKeyId, model: $model, endUser: $endUser, tag: $tag) {\n      byEndUser {\n        endUser\n        ...UsageFiguresFields\n      }\n      byTag {\n        tag\n        ...UsageFiguresFields\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment ExportJobFields on Export {\n    id\n    status\n    format\n    rowCount\n    error\n    downloadUrl\n    createdAt\n    finishedAt\n  }\n"): (typeof documents)["\n  fragment ExportJobFields on Export {\n    id\n    status\n    format\n    rowCount\n    error\n    downloadUrl\n    createdAt\n    finishedAt\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation StartExport($format: ExportFormat!, $filter: UsageFilter) {\n    startExport(format: $format, filter: $filter) {\n      ...ExportJobFields\n    }\n  }\n"): (typeof documents)["\n  mutation StartExport($format: ExportFormat!, $filter: UsageFilter) {\n    startExport(format: $format, filter: $filter) {\n      ...ExportJobFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Export($id: ID!) {\n    export(id: $id) {\n      ...ExportJobFields\n    }\n  }\n"): (typeof documents)["\n  query Export($id: ID!) {\n    export(id: $id) {\n      ...ExportJobFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Exports {\n    exports {\n      ...ExportJobFields\n    }\n  }\n"): (typeof documents)["\n  query Exports {\n    exports {\n      ...ExportJobFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Wallet {\n    wallet {\n      balance\n      currency\n      spentToday\n      spentThisMonth\n      keys {\n        spent\n        apiKey {\n          id\n          name\n          prefix\n          state\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query Wallet {\n    wallet {\n      balance\n      currency\n      spentToday\n      spentThisMonth\n      keys {\n        spent\n        apiKey {\n          id\n          name\n          prefix\n          state\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment LedgerEntryFields on LedgerEntry {\n    id\n    createdAt\n    kind\n    amount\n    balanceAfter\n    note\n    requestId\n    apiKeyId\n    batchId\n    calls\n  }\n"): (typeof documents)["\n  fragment LedgerEntryFields on LedgerEntry {\n    id\n    createdAt\n    kind\n    amount\n    balanceAfter\n    note\n    requestId\n    apiKeyId\n    batchId\n    calls\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Ledger($first: Int, $after: String) {\n    ledger(first: $first, after: $after) {\n      endCursor\n      hasNextPage\n      nodes {\n        ...LedgerEntryFields\n      }\n    }\n  }\n"): (typeof documents)["\n  query Ledger($first: Int, $after: String) {\n    ledger(first: $first, after: $after) {\n      endCursor\n      hasNextPage\n      nodes {\n        ...LedgerEntryFields\n      }\n    }\n  }\n"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;