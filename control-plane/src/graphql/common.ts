import { GraphQLError } from "graphql";
import { forbidden, notFound, unauthenticated } from "../services/errors.ts";
import { amountSchema, pageSize, parseField } from "../services/inputs.ts";
import { formatAmount } from "../services/money.ts";
import { isOperator } from "./builder.ts";
import type { GqlContext } from "./context.ts";

export const money = (micro: bigint) => formatAmount(micro);

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** An id argument that is not even UUID-shaped names nothing. */
export function checkId(id: string, what: string): string {
  if (!uuid.test(id)) throw notFound(what);
  return id;
}

export function principalOf(ctx: GqlContext) {
  if (!ctx.principal) throw unauthenticated();
  return ctx.principal;
}

/**
 * The account a request may act on. Customers act on their own account only (naming another one is FORBIDDEN);
 * "manage" needs the owner role. Operators may name any account.
 */
export function accountIdFor(ctx: GqlContext, requested: string | null | undefined, need: "read" | "manage"): string {
  const p = principalOf(ctx);
  if (isOperator(ctx)) {
    const id = requested ?? p.user.accountId;
    if (!id)
      throw new GraphQLError("operators must name the account (accountId)", { extensions: { code: "BAD_USER_INPUT" } });
    return checkId(id, "account");
  }
  const own = p.user.accountId;
  if (!own || p.user.role === "operator") throw forbidden("this needs a customer account");
  if (requested && requested !== own) throw forbidden("you may only act on your own account");
  if (need === "manage" && p.user.role !== "owner") throw forbidden("only the account's owners may do this");
  return own;
}

/** A page size argument within bounds: the services' rule, so GraphQL and the CLI refuse the same sizes. */
export const clampFirst = pageSize;

/** A money argument (decimal text) in micro-units; a malformed amount is BAD_USER_INPUT naming the field. */
export const amountArg = (text: string, field: string) => parseField(amountSchema, text, field);
