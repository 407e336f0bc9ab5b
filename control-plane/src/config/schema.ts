import { z } from "zod";

// The declarative config file (GATEWAY_CONFIG, YAML or JSON). Its shape is a public contract.

const price = z
  .number()
  .nonnegative()
  .or(z.string().regex(/^\d+(\.\d{1,6})?$/));

export const configSchema = z
  .object({
    upstreams: z
      .array(
        z
          .object({
            name: z.string().min(1),
            protocol: z.enum(["openai", "anthropic", "gemini", "openai-responses", "demo"]),
            baseUrl: z.string().url().or(z.literal("demo://local")),
            apiKey: z.string().optional(),
            timeouts: z
              .object({
                connectMs: z.number().int().positive().optional(),
                firstByteMs: z.number().int().positive().optional(),
                idleMs: z.number().int().positive().optional(),
              })
              .optional(),
          })
          .strict(),
      )
      .default([]),
    models: z
      .array(
        z
          .object({
            id: z.string().min(1),
            displayName: z.string().optional(),
            reasoning: z.boolean().default(false),
            /**
             * strict: toward an upstream of another protocol, what would be dropped (hints with no equivalent) or
             * removed (hosted tools it cannot run) is refused with a 400 instead (docs/protocols.md)
             */
            strict: z.boolean().default(false),
            /** embedding: served by /v1/embeddings and Gemini's :embedContent, billed by input tokens */
            type: z.enum(["chat", "embedding"]).default("chat"),
            // Required, input and output both: a model is never billed 0 by omission (an explicit 0 is free).
            price: z
              .object({
                input: price,
                output: price,
                cachedInput: price.optional(),
                cacheWrite5m: price.optional(),
                cacheWrite1h: price.optional(),
              })
              .strict(),
            routes: z
              .array(
                z
                  .object({
                    upstream: z.string(),
                    model: z.string(),
                    weight: z.number().int().nonnegative().default(1),
                    priority: z.number().int().default(0),
                  })
                  .strict(),
              )
              .min(1),
          })
          .strict(),
      )
      .default([]),
  })
  .strict();

export type GatewayConfig = z.infer<typeof configSchema>;
