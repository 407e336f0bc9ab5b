import { z } from "zod";
import { microString } from "./snapshot.ts";

export const clientProtocolSchema = z.enum(["openai", "anthropic", "gemini"]);
export type ClientProtocol = z.infer<typeof clientProtocolSchema>;

// One event per call that reached the routing stage; the control plane settles it idempotently by requestId.
export const usageEventSchema = z.object({
  requestId: z.string().min(1),
  keyId: z.string(),
  accountId: z.string(),
  model: z.string(),
  protocol: clientProtocolSchema,
  upstream: z.string().nullable(),
  stream: z.boolean(),
  promptTokens: z.number().int().nonnegative(),
  completionTokens: z.number().int().nonnegative(),
  reasoningTokens: z.number().int().nonnegative(),
  cachedTokens: z.number().int().nonnegative(),
  cost: microString,
  status: z.number().int(),
  errorCode: z.string().nullable(),
  latencyMs: z.number().int().nonnegative(),
  ttftMs: z.number().int().nonnegative().nullable(),
  clientIp: z.string().nullable(),
  startedAt: z.string(),
});
export type UsageEvent = z.infer<typeof usageEventSchema>;
