// Provider-side ids on the passthrough path (see conversations/provider-ids.ts): a request may name only ids
// the provider gave the caller's own account, and the ids an answer hands out are remembered for that account
// before the client can name them.

import { GatewayError } from "../errors.ts";
import type { PassthroughStream, ProtocolAdapter } from "../protocols/index.ts";
import type { DataPlaneOptions } from "./context.ts";

/**
 * The refusal for the first id the request names that is not the account's: a 404 like an unknown id (another
 * tenant's id and one that never existed are told apart by nobody). Null when every id is the account's.
 */
export async function foreignIdRefusal(
  opts: DataPlaneOptions,
  client: ProtocolAdapter,
  body: Record<string, unknown>,
  accountId: string,
): Promise<GatewayError | null> {
  const named = client.passthrough?.namedIds?.(body) ?? [];
  if (named.length === 0) return null;
  const foreign = await opts.providerIds.foreign(
    accountId,
    named.map((n) => n.id),
  );
  if (foreign === null) return null;
  const { param } = named.find((n) => n.id === foreign)!;
  const what =
    param === "previous_response_id" ? "Previous response" : param === "conversation" ? "Conversation" : "Item";
  return new GatewayError("not_found", "not_found", `${what} with id '${foreign.slice(0, 200)}' not found.`, param);
}

/** Remembers ids for the account; a failure (Redis away) is logged, and the answer still goes out. */
export const idKeeper =
  (opts: DataPlaneOptions, accountId: string, requestId: string) =>
  async (ids: readonly string[]): Promise<void> => {
    try {
      await opts.providerIds.record(accountId, ids);
    } catch (err) {
      opts.logger.warn(
        { requestId, err: (err as Error)?.message ?? String(err) },
        "provider ids not recorded: the caller's next call naming them will be refused",
      );
    }
  };

/**
 * A passthrough stream whose provider ids are remembered as soon as the stream shows them: the response's id
 * comes with its first event, long before the `response.completed` a client continues from.
 */
export function keepingIds(
  reader: PassthroughStream,
  keep: (ids: readonly string[]) => Promise<void>,
): PassthroughStream {
  if (reader.providerIds === undefined) return reader;
  let kept = 0;
  const drain = () => {
    const ids = reader.providerIds!;
    if (ids.length === kept) return;
    void keep(ids.slice(kept));
    kept = ids.length;
  };
  return new Proxy(reader, {
    get(target, prop, receiver) {
      if (prop === "push")
        return (chunk: Uint8Array) => {
          const out = target.push(chunk);
          drain();
          return out;
        };
      if (prop === "end")
        return () => {
          const out = target.end();
          drain();
          return out;
        };
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
}
