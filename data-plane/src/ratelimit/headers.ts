import { GatewayError } from "../errors.ts";
import type { RateLimitDenial, RateLimitInfo } from "./types.ts";

/** A duration as OpenAI writes its reset headers (Go style): "250ms", "1.5s", "6m0s", "1h2m3s". */
export function formatReset(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.ceil(ms))}ms`;
  const totalSeconds = Math.ceil(ms) / 1000;
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  // Rounded to milliseconds so 1.5 stays "1.5" and float noise does not print as 1.4999999.
  const seconds = Math.round((totalSeconds % 60) * 1000) / 1000;
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}

/**
 * The x-ratelimit-* headers OpenAI sends (and clients such as the openai SDK read), for the tighter of the
 * key's and the account's limits; on a refusal also Retry-After (whole seconds, rounded up) and
 * retry-after-ms, which the official SDKs prefer when present.
 */
export function rateLimitHeaders(info: RateLimitInfo, denial?: RateLimitDenial): Record<string, string> {
  const h: Record<string, string> = {};
  if (info.requests !== null) {
    h["x-ratelimit-limit-requests"] = String(info.requests.limit);
    h["x-ratelimit-remaining-requests"] = String(info.requests.remaining);
    h["x-ratelimit-reset-requests"] = formatReset(info.requests.resetMs);
  }
  if (info.tokens !== null) {
    h["x-ratelimit-limit-tokens"] = String(info.tokens.limit);
    h["x-ratelimit-remaining-tokens"] = String(info.tokens.remaining);
    h["x-ratelimit-reset-tokens"] = formatReset(info.tokens.resetMs);
  }
  if (denial !== undefined) {
    h["retry-after"] = String(Math.max(1, Math.ceil(denial.retryAfterMs / 1000)));
    h["retry-after-ms"] = String(denial.retryAfterMs);
  }
  return h;
}

const KIND_TEXT = { rpm: "requests per minute", tpm: "tokens per minute", concurrency: "concurrent requests" } as const;

/**
 * The 429 a refusal becomes: code rate_limit_exceeded, a message naming the limit and the wait, and the
 * headers above (the SDKs retry after Retry-After on their own).
 */
export function rateLimitError(denial: RateLimitDenial): GatewayError {
  const who = denial.scope === "key" ? "this API key" : "this account";
  const wait = formatReset(denial.retryAfterMs);
  return new GatewayError(
    "rate_limit",
    "rate_limit_exceeded",
    `Rate limit reached for ${who}: ${denial.limit} ${KIND_TEXT[denial.kind]}. Retry after ${wait}.`,
    null,
    rateLimitHeaders(denial.info, denial),
  );
}
