import { isIP } from "node:net";
import { z } from "zod";
import { badInput } from "./errors.ts";
import { parseAmount } from "./money.ts";

// The zod schemas for the inputs the services take, one per field, shared by every way in (GraphQL resolvers and
// the admin CLI), so both refuse exactly the same things with the same words.

/** One allowlist entry: an IPv4 or IPv6 address, optionally with a prefix length in range for its family. */
export const cidrSchema = z
  .string()
  .trim()
  .superRefine((s, ctx) => {
    const [addr, bits, extra] = s.split("/");
    const family = addr ? isIP(addr) : 0;
    if (!family || extra !== undefined) {
      ctx.addIssue({ code: "custom", message: `not an IP address or CIDR: ${s}` });
      return;
    }
    if (bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) > (family === 4 ? 32 : 128))) {
      ctx.addIssue({ code: "custom", message: `bad prefix length in ${s}` });
    }
  });

/** An allowlist: each entry checked, duplicates dropped (order kept). */
export const ipAllowlistSchema = z.array(cidrSchema).transform((l) => [...new Set(l)]);

/** Account and key names: trimmed, 1 to 100 characters. */
export const nameSchema = z
  .string()
  .trim()
  .min(1, "a name of 1 to 100 characters is needed")
  .max(100, "a name of 1 to 100 characters is needed");

/** rpm, tpm, concurrency: a positive whole number (at most ten million). */
export const limitValueSchema = (field: string) =>
  z.number().refine((n) => Number.isInteger(n) && n > 0 && n <= 10_000_000, `${field} must be a positive whole number`);

/** A limit as the services take it: the value, or null for no limit. */
export const limitSchema = (field: string) => limitValueSchema(field).nullable();

/** An amount typed as decimal text ("12.5"), exactly, in micro-units; a malformed one says why. */
export const amountSchema = z.string().transform((s, ctx) => {
  try {
    return parseAmount(s);
  } catch (err) {
    ctx.addIssue({ code: "custom", message: (err as Error).message });
    return z.NEVER;
  }
});

/** A whole number typed as text (the CLI's options), greater than zero. */
export const positiveIntText = z
  .string()
  .regex(/^\d+$/, "must be a positive integer")
  .transform(Number)
  .refine((n) => n > 0, "must be a positive integer");

/** How many rows a read returns: `first` when given (1..max, else refused, never cut silently), else `def`. */
export function pageSize(first: number | null | undefined, def: number, max: number): number {
  const n = first ?? def;
  if (!Number.isInteger(n) || n < 1 || n > max) throw badInput(`first must be 1..${max}`, "first");
  return n;
}

/** Parses one field with its schema; a refusal is the API's BAD_USER_INPUT naming the field. */
export function parseField<S extends z.ZodType>(schema: S, value: unknown, field: string): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw badInput(r.error.issues[0]?.message ?? `bad ${field}`, field);
  return r.data;
}
