import { z } from "zod";
import { alertEvents, MAX_ALERT_PAGE, webhooksOf } from "../../alerts/history.ts";
import { alertConfig, type AlertSettingsChange, setAlertSettings } from "../../alerts/settings.ts";
import type { ServiceContext } from "../../services/context.ts";
import { positiveIntText } from "../../services/inputs.ts";
import { formatAmount } from "../../services/money.ts";
import { alertAccount, alertScope, amountOrNone, limitArg, list, none } from "../args.ts";
import { command } from "../command.ts";

// Alert rules of an account (or the operators' own) and the alerts that fired.

const percent = z.string().regex(/^\d+$/, "percents are whole numbers").transform(Number);

async function settingsView(ctx: ServiceContext, accountId: string | null) {
  const c = await alertConfig(ctx, accountId);
  const webhooks = await webhooksOf(ctx, c.id);
  return {
    account: accountId,
    operators: accountId === null,
    percents: c.percents,
    balanceBelow: c.balanceBelowMicro === null ? null : formatAmount(c.balanceBelowMicro),
    keyExpiryDays: c.keyExpiryDays,
    breakerOpen: c.breakerOpen,
    emails: c.emails,
    webhooks: webhooks.map((w) => ({ id: w.id, url: w.url, createdAt: w.createdAt.toISOString() })),
  };
}

export const alertCommands = {
  "alerts show": command({
    usage: "--account NAME_OR_ID | --operators",
    args: alertScope,
    run: async (ctx, a) => settingsView(ctx, await alertAccount(ctx, a)),
  }),
  "alerts set": command({
    usage:
      "--account NAME_OR_ID | --operators [--percents 50,80,100|none] [--balance-below AMOUNT|none] [--key-expiry-days N|none] [--breaker-open true|false] [--emails A,B|none]",
    note: "alert rules; none removes one; --breaker-open is the operators' only",
    args: alertScope.and(
      z.object({
        percents: z.union([none([] as number[]), list.pipe(z.array(percent))]).optional(),
        "balance-below": amountOrNone.optional(),
        "key-expiry-days": z.union([none(null), positiveIntText]).optional(),
        "breaker-open": z
          .enum(["true", "false"])
          .transform((v) => v === "true")
          .optional(),
        emails: z.union([none([] as string[]), list]).optional(),
      }),
    ),
    run: async (ctx, a) => {
      const accountId = await alertAccount(ctx, a);
      // The same service (and its checks) as the setAlertSettings mutation; the control plane's timer
      // evaluates the new settings within MODELGATE_ALERTS_INTERVAL_MS.
      const change: AlertSettingsChange = {};
      if (a.percents !== undefined) change.percents = a.percents;
      if (a.emails !== undefined) change.emails = a.emails;
      if (a["balance-below"] !== undefined) change.balanceBelowMicro = a["balance-below"];
      if (a["key-expiry-days"] !== undefined) change.keyExpiryDays = a["key-expiry-days"];
      if (a["breaker-open"] !== undefined) change.breakerOpen = a["breaker-open"];
      await setAlertSettings(ctx, accountId, change);
      return settingsView(ctx, accountId);
    },
  }),
  "alerts events": command({
    usage: "--account NAME_OR_ID | --operators [--limit N]",
    note: `alerts that fired, newest first; N is 1..${MAX_ALERT_PAGE}, default 50`,
    args: alertScope.and(z.object({ limit: limitArg(MAX_ALERT_PAGE).optional() })),
    options: { first: "limit" },
    run: async (ctx, a) =>
      (await alertEvents(ctx, await alertAccount(ctx, a), a.limit)).map((e) => ({
        id: e.id,
        kind: e.kind,
        dedupeKey: e.dedupeKey,
        firedAt: e.firedAt.toISOString(),
        payload: e.payload,
      })),
  }),
};
