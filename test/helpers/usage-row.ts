import type { Gateway } from "./gateway.ts";
import { eventually } from "./processes.ts";

/** One row of `usage list` as the CLI prints it (the fields the end-to-end tests check). */
export interface UsageListRow {
  requestId: string;
  model: string;
  status: number;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  cacheWrite5mTokens: number;
  cacheWrite1hTokens: number;
  costMicro: string;
  estimated: boolean;
}

/** The usage row of one request, once settlement has written it (among the account's newest 200). */
export async function usageRowOf(gw: Gateway, account: string, requestId: string): Promise<UsageListRow> {
  const rows = await eventually(
    () => gw.admin<UsageListRow[]>("usage list", { account, limit: "200" }),
    (r) => r.some((x) => x.requestId === requestId),
  );
  return rows.find((x) => x.requestId === requestId)!;
}
