import { OPERATOR_PROTOCOLS, PROVIDERS, enumName } from "@modelgate/data-plane";
import { builder } from "../builder.ts";

export const UserRoleEnum = builder.enumType("UserRole", { values: ["member", "owner", "operator"] as const });
export const AccountKindEnum = builder.enumType("AccountKind", { values: ["standard", "trial"] as const });
export const AccountStatusEnum = builder.enumType("AccountStatus", { values: ["active", "disabled"] as const });
export const ApiKeyStatusEnum = builder.enumType("ApiKeyStatus", { values: ["active", "revoked"] as const });
export const LedgerKindEnum = builder.enumType("LedgerKind", {
  description:
    "usage: one settled batch's calls of an account (calls, summed cost); correction: exact counts replacing " +
    "estimates, summed per batch; charge and refund: one call each (lines settled before usage lines)",
  values: ["topup", "charge", "refund", "adjustment", "usage", "correction"] as const,
});
export const UpstreamProtocolEnum = builder.enumType("UpstreamProtocol", {
  description: "An upstream's wire protocol (hyphens written as underscores)",
  values: OPERATOR_PROTOCOLS.map(enumName) as unknown as readonly [
    "openai",
    "anthropic",
    "gemini",
    "openai_responses",
    "demo",
  ],
});
export const UpstreamProviderEnum = builder.enumType("UpstreamProvider", {
  description: "Who serves an upstream (docs/providers.md); direct: the protocol's own vendor at its base URL",
  values: PROVIDERS.map(enumName) as [string, ...string[]],
});
export const ConfigSourceEnum = builder.enumType("ConfigSource", { values: ["config", "api", "builtin"] as const });
export const ModelTypeEnum = builder.enumType("ModelType", {
  description:
    "chat: the generation endpoints; embedding: /v1/embeddings and Gemini's :embedContent, billed by input tokens",
  values: ["chat", "embedding"] as const,
});
export const ExportFormatEnum = builder.enumType("ExportFormat", {
  values: { CSV: { value: "csv" }, JSONL: { value: "jsonl" } } as const,
});
export const ExportStatusEnum = builder.enumType("ExportStatus", {
  values: ["pending", "running", "ready", "failed"] as const,
});
export const ExportKindEnum = builder.enumType("ExportKind", {
  description: "usage: the usage log; audit: the audit log",
  values: ["usage", "audit"] as const,
});
export const GranularityEnum = builder.enumType("Granularity", {
  values: { HOUR: { value: "hour" }, DAY: { value: "day" } } as const,
});
export const TokenScopeEnum = builder.enumType("TokenScope", {
  description: "read: queries; write: mutations; operator: operator operations (operators only).",
  values: ["read", "write", "operator"] as const,
});
