import { z } from "zod";
import {
  OPERATOR_PROTOCOLS,
  PROVIDER_OPTIONS,
  PROVIDERS,
  SECRET_MAX_LENGTH,
  type ProviderName,
  checkUpstreamShape,
} from "../services/upstream-provider.ts";
import { MAX_MODEL_FALLBACKS } from "../services/model-fallbacks.ts";

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
            /** who serves it (docs/providers.md); absent: the protocol's own vendor at baseUrl */
            provider: z.enum(PROVIDERS as [ProviderName, ...ProviderName[]]).optional(),
            /** the wire protocol; implied by the provider (and per model) where it is not given */
            protocol: z.enum(OPERATOR_PROTOCOLS).optional(),
            /** absent: the provider's default endpoint */
            baseUrl: z.string().url().or(z.literal("demo://local")).optional(),
            apiKey: z.string().max(SECRET_MAX_LENGTH.apiKey).optional(),
            /** a key pool instead of apiKey: calls spread by weight, a refused key leaves (docs/routing.md) */
            keys: z
              .array(
                z
                  .object({
                    id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "1 to 64 letters, digits, '.', '_' or '-'"),
                    apiKey: z.string().min(1).max(SECRET_MAX_LENGTH.apiKey),
                    weight: z.number().int().nonnegative().default(1),
                  })
                  .strict(),
              )
              .min(1)
              .max(64)
              .optional(),
            apiVersion: z.string().min(1).optional(),
            region: z
              .string()
              .regex(/^[a-z0-9-]+$/, "a region name such as us-east-1")
              .optional(),
            project: z.string().min(1).optional(),
            auth: z.enum(["key", "entra"]).optional(),
            accessKeyId: z.string().min(1).max(SECRET_MAX_LENGTH.accessKeyId).optional(),
            secretAccessKey: z.string().min(1).max(SECRET_MAX_LENGTH.secretAccessKey).optional(),
            sessionToken: z.string().min(1).max(SECRET_MAX_LENGTH.sessionToken).optional(),
            /** a Google service-account (or authorized-user) JSON file, read at start and on every reload */
            credentialsFile: z.string().min(1).optional(),
            /** the same file's content given inline (from an environment variable) */
            serviceAccount: z.string().min(1).max(SECRET_MAX_LENGTH.serviceAccount).optional(),
            timeouts: z
              .object({
                connectMs: z.number().int().positive().optional(),
                firstByteMs: z.number().int().positive().optional(),
                idleMs: z.number().int().positive().optional(),
              })
              .optional(),
          })
          .strict()
          .superRefine((u, ctx) => {
            const options = Object.fromEntries(
              PROVIDER_OPTIONS.filter((k) => u[k] !== undefined).map((k) => [k, u[k]!]),
            );
            const checked = checkUpstreamShape({
              provider: u.provider ?? "direct",
              protocol: u.protocol ?? null,
              baseUrl: u.baseUrl ?? null,
              options,
            });
            if ("problem" in checked) ctx.addIssue({ code: "custom", message: checked.problem, path: [checked.field] });
            if (u.keys !== undefined && u.apiKey !== undefined)
              ctx.addIssue({ code: "custom", message: "give apiKey or keys, not both", path: ["keys"] });
            if (u.keys !== undefined && new Set(u.keys.map((k) => k.id)).size !== u.keys.length)
              ctx.addIssue({ code: "custom", message: "a key id is given twice", path: ["keys"] });
            if (u.credentialsFile !== undefined && u.serviceAccount !== undefined)
              ctx.addIssue({
                code: "custom",
                message: "give credentialsFile or serviceAccount, not both",
                path: ["serviceAccount"],
              });
          }),
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
            /**
             * models tried in order when every route of this one fails before the first byte; the answer and the
             * bill name the one that served (docs/routing.md)
             */
            fallbacks: z.array(z.string().min(1).max(200)).max(MAX_MODEL_FALLBACKS).default([]),
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
