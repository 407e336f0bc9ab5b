// Result shapes of the operations the console sends (a hand-written subset of control-plane/schema.graphql).

export type ApiKeyState = "active" | "revoked" | "expired" | "exhausted";

export interface Account {
  id: string;
  name: string;
  currency: string;
  kind: "standard" | "trial";
  status: "active" | "disabled";
  trialPolicy: { expiresAt: string; quota: string } | null;
}

export interface User {
  id: string;
  email: string;
  name: string | null;
  role: "owner" | "member" | "operator";
  emailVerified: boolean;
  twoStepEnabled: boolean;
  account: Account | null;
}

export interface Viewer {
  via: string;
  recoveryCodesLeft: number;
  user: User;
}

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  state: ApiKeyState | string;
  status: "active" | "revoked";
  allowedModels: string[];
  ipAllowlist: string[];
  quotaCap: string | null;
  spent: string;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
  createdAt: string;
  rpm: number | null;
  tpm: number | null;
  concurrency: number | null;
  budgets: Budget[];
}

export type BudgetPeriod = "day" | "week" | "month";

/** A spend limit in its current period (money as decimal text). */
export interface Budget {
  period: BudgetPeriod;
  limit: string;
  spent: string;
  remaining: string;
  startsAt: string;
  resetsAt: string;
}

export interface BudgetsInput {
  daily?: string | null;
  weekly?: string | null;
  monthly?: string | null;
}

export interface AccountBudgets {
  id: string;
  timeZone: string;
  budgets: Budget[];
  budgetCaps: { daily: string | null; weekly: string | null; monthly: string | null };
}

export interface WebhookDelivery {
  id: string;
  webhookId: string;
  kind: string;
  status: "pending" | "delivered" | "failed";
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  nextAttemptAt: string | null;
  createdAt: string;
  deliveredAt: string | null;
}

export interface AlertOverview {
  alertSettings: {
    percents: number[];
    balanceBelow: string | null;
    keyExpiryDays: number | null;
    emails: string[];
    webhooks: { id: string; url: string; createdAt: string }[];
  };
  alertEvents: { id: string; kind: string; payload: string; firedAt: string }[];
  webhookDeliveries: WebhookDelivery[];
}

export interface AlertSettingsInput {
  percents?: number[];
  balanceBelow?: string | null;
  keyExpiryDays?: number | null;
  emails?: string[];
}

export interface ApiKeyRestrictionsInput {
  name?: string;
  quotaCap?: string | null;
  expiresAt?: string | null;
  allowedModels?: string[];
  ipAllowlist?: string[];
  rpm?: number | null;
  tpm?: number | null;
  concurrency?: number | null;
}

export interface CustomerModel {
  id: string;
  displayName: string | null;
  reasoning: boolean;
  inputPrice: string;
  outputPrice: string;
  cachedInputPrice: string | null;
  contracted: boolean;
}

export interface UsageEntry {
  id: string;
  requestId: string;
  startedAt: string;
  apiKeyId: string | null;
  model: string;
  protocol: string;
  status: number;
  errorCode: string | null;
  stream: boolean;
  promptTokens: number;
  completionTokens: number;
  reasoningTokens: number;
  cachedTokens: number;
  inputTokens: number;
  cacheWrite5mTokens: number;
  cacheWrite1hTokens: number;
  totalTokens: number;
  amount: string;
  /** unit prices per 1M tokens; null when the call was not billed */
  prices: { input: string; cachedInput: string; cacheWrite5m: string; cacheWrite1h: string; output: string } | null;
  /** the counts are the gateway's estimate (a stream cut before the upstream reported usage) */
  estimated: boolean;
  endUser: string | null;
  tags: string[];
  latencyMs: number;
  ttftMs: number | null;
}

export interface UsageFilter {
  apiKeyId?: string;
  model?: string;
  success?: boolean;
  status?: number;
  from?: string;
  to?: string;
  endUser?: string;
  tag?: string;
}

/** Spend grouped by one attribution dimension (end user or tag). */
export interface AttributionGroup {
  key: string | null;
  requests: number;
  totalTokens: number;
  amount: string;
}

export interface Page<T> {
  nodes: T[];
  endCursor: string | null;
  hasNextPage: boolean;
}

export interface UsageFigures {
  requests: number;
  totalTokens: number;
  promptTokens: number;
  completionTokens: number;
  errors: number;
  amount: string;
}

export interface UsageStats {
  total: UsageFigures;
  series: (UsageFigures & { bucket: string })[];
  byModel: (UsageFigures & { model: string })[];
  byKey: (UsageFigures & { apiKeyId: string | null; apiKeyName: string | null })[];
}

export interface Wallet {
  balance: string;
  currency: string;
  spentToday: string;
  spentThisMonth: string;
  keys: { spent: string; apiKey: Pick<ApiKey, "id" | "name" | "prefix" | "state"> }[];
}

export interface LedgerEntry {
  id: string;
  createdAt: string;
  kind: "topup" | "charge" | "refund" | "adjustment";
  amount: string;
  balanceAfter: string;
  note: string | null;
  requestId: string | null;
  apiKeyId: string | null;
}

export type ExportStatus = "pending" | "running" | "ready" | "failed";

export interface ExportJob {
  id: string;
  status: ExportStatus;
  format: "CSV" | "JSONL";
  rowCount: number;
  error: string | null;
  downloadUrl: string | null;
  createdAt: string;
  finishedAt: string | null;
}
