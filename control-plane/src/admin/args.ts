import { z } from "zod";
import { amountSchema, positiveIntText } from "../services/inputs.ts";
import { resolveAccount } from "../services/accounts.ts";
import type { ServiceContext } from "../services/context.ts";

// Option types several command groups share; the field rules themselves are the services' (services/inputs.ts).

/** --account: an account's name or id */
export const accountArg = z.string().min(1);
export const keyIdArg = z.string().uuid("must be a key id (UUID)");
/** A comma-separated list, blanks dropped. */
export const list = z.string().transform((s) =>
  s
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean),
);
/** "none" for a value that removes a setting */
export const none = <T>(v: T) => z.literal("none").transform(() => v);
/** An amount, or "none" to remove it (budgets, alert thresholds). */
export const amountOrNone = z.union([none(null), amountSchema]);
export const iso = z
  .string()
  .refine((s) => !Number.isNaN(Date.parse(s)), "must be an ISO 8601 date-time")
  .transform((s) => new Date(s));

/** --limit of a read: the service's own maximum, refused above it as GraphQL refuses `first` (never cut). */
export const limitArg = (max: number) => positiveIntText.refine((n) => n <= max, `must be 1..${max}`);

/** Whose alerts: an account's (--account) or the operators' own (--operators), exactly one. */
export const alertScope = z
  .object({ account: accountArg.optional(), operators: z.boolean().optional() })
  .refine((a) => (a.account === undefined) !== (a.operators !== true), {
    message: "name an account (--account) or the operators' own alerts (--operators), not both",
    path: ["account"],
  });

/** The account an alert command names (null: the operators' own alerts). */
export async function alertAccount(
  ctx: ServiceContext,
  a: { account?: string; operators?: boolean },
): Promise<string | null> {
  return a.operators ? null : (await resolveAccount(ctx, a.account!)).id;
}
