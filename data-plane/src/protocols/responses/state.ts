// Conversation state for the Responses API. A request may continue an earlier response (previous_response_id)
// or name earlier output items (item_reference). Toward an `openai-responses` upstream these pass through and
// the provider keeps the state; toward any other upstream the gateway resolves them from its own store (only
// when the operator turned it on: the specification keeps business data out of the gateway by default) and
// keeps each answer, with the conversation that led to it, before telling the client it is complete.

import { setImmediate as turn } from "node:timers/promises";
import { GatewayError } from "../../errors.ts";
import { type Json, arr, obj, str } from "../shared.ts";
import type { ClientSession, ConversationStore, StoredOperation } from "../types.ts";
import { itemType } from "./request.ts";
import { responseIdOfItem } from "./response.ts";

interface StoredResponse {
  /** the Response object as the client received it (GET /v1/responses/{id}) */
  response: Json;
  /** the whole conversation up to and including this response's output, as input items */
  items: Json[];
  /** this request's own input items (references resolved), for GET /v1/responses/{id}/input_items */
  input?: Json[];
}

const notFound = (what: string, id: string, param: string) =>
  new GatewayError("not_found", "not_found", `${what} with id '${id}' not found.`, param);

const inputItems = (input: unknown): Json[] =>
  typeof input === "string" ? [{ role: "user", content: input }] : arr(input).map(obj);

/** What one request may make of the gateway's store (see docs/security.md, "Stored Responses"). */
export interface SessionLimits {
  /**
   * The largest body the gateway accepts (MODELGATE_MAX_BODY_BYTES): the request as it goes upstream, with
   * previous_response_id's history and every item reference expanded, may not be larger.
   */
  maxBytes: number;
  /** the client's body as it arrived, counted in full (its own items and the references themselves) */
  bodyBytes: number;
}

/**
 * Stored records one request may read to resolve its references, as a multiple of maxBytes: each record
 * read is decrypted and parsed (about 10 ms per MB on the thread that serves every request), and a reference
 * to a small item of a large record costs the whole record.
 */
export const READ_BUDGET_FACTOR = 8;

const DEFAULT_LIMITS: SessionLimits = { maxBytes: 4 * 1024 * 1024, bodyBytes: 0 };

const bytesOf = (v: unknown): number => Buffer.byteLength(JSON.stringify(v));

/** A stored record as a lookup: its items by id, each measured once, on first use. */
interface IndexedRecord {
  rec: StoredResponse;
  items: Map<string, { item: Json; bytes: number | null }>;
}

const indexed = (rec: StoredResponse): IndexedRecord => {
  const items = new Map<string, { item: Json; bytes: number | null }>();
  // The response's own output first, then the conversation: the first with an id is the one referenced.
  for (const x of [...arr(rec.response.output), ...arr(rec.items)].map(obj)) {
    const id = str(x.id);
    if (id !== undefined && !items.has(id)) items.set(id, { item: x, bytes: null });
  }
  return { rec, items };
};

export function openResponsesSession(
  body: Json,
  store: ConversationStore | null,
  accountId: string,
  limits: SessionLimits = DEFAULT_LIMITS,
): ClientSession {
  const previousId = str(body.previous_response_id) ?? null;
  const input = inputItems(body.input);
  const refersToState = previousId !== null || input.some((i) => itemType(i) === "item_reference");
  let expanded: Json[] = input;
  let own: Json[] = input;
  let expandedBytes: number | null = null;
  // Sizes are added up before anything is built, and the request refused as soon as they pass the limit:
  // 900 references to one 64 KB item used to be expanded (and serialised) in full, seconds of the event loop.
  let total = limits.bodyBytes;
  const grow = (bytes: number) => {
    total += bytes;
    if (total > limits.maxBytes) {
      throw new GatewayError(
        "invalid_request",
        "expanded_input_too_large",
        `With previous_response_id and its item references expanded, this input would be more than ${limits.maxBytes} bytes, this gateway's limit for a request (MODELGATE_MAX_BODY_BYTES): reference fewer or smaller items, or start a new conversation with the input in full.`,
        previousId !== null ? "previous_response_id" : "input",
      );
    }
  };
  let read = 0;
  const load = async (id: string, param: string): Promise<StoredResponse> => {
    const found = await store!.get(accountId, id);
    if (!found) throw notFound("Previous response", id, param);
    read += found.bytes;
    if (read > limits.maxBytes * READ_BUDGET_FACTOR) {
      throw new GatewayError(
        "invalid_request",
        "expanded_input_too_large",
        `The item references of this input name more stored responses than one request may read (${READ_BUDGET_FACTOR} times MODELGATE_MAX_BODY_BYTES, ${limits.maxBytes * READ_BUDGET_FACTOR} bytes): use previous_response_id, or send the items in full.`,
        param,
      );
    }
    // Each record is decrypted and parsed on this thread: let other requests run between two of them.
    await turn();
    return found.record as unknown as StoredResponse;
  };
  const fresh = input.filter((i) => itemType(i) !== "item_reference");
  const withoutState: Json = { ...body, input: fresh.length === 0 ? "" : fresh };
  delete withoutState.previous_response_id;
  const session: ClientSession = {
    refersToState,
    withoutState,
    get expandedBytes() {
      return expandedBytes;
    },
    async expand() {
      if (!refersToState) return body;
      if (!store) {
        throw new GatewayError(
          "invalid_request",
          "stored_responses_disabled",
          "This gateway does not keep responses, so 'previous_response_id' and item references cannot be resolved for this model: send the full conversation in 'input' instead.",
          previousId !== null ? "previous_response_id" : "input",
        );
      }
      const history: Json[] = previousId !== null ? ((await load(previousId, "previous_response_id")).items ?? []) : [];
      if (history.length > 0) grow(bytesOf(history));
      const records = new Map<string, IndexedRecord>();
      // Each referenced item is looked up and measured once, however often it is named.
      const resolved: Json[] = [];
      for (const [i, item] of input.entries()) {
        if (itemType(item) !== "item_reference") {
          resolved.push(item);
          continue;
        }
        const id = str(item.id) ?? "";
        const responseId = responseIdOfItem(id);
        const param = `input[${i}].id`;
        if (responseId === null) throw notFound("Item", id, param);
        let rec = records.get(responseId);
        if (!rec) {
          rec = indexed(
            await load(responseId, param).catch((err: unknown) => {
              throw err instanceof GatewayError && err.code === "expanded_input_too_large"
                ? err
                : notFound("Item", id, param);
            }),
          );
          records.set(responseId, rec);
        }
        const found = rec.items.get(id);
        if (!found) throw notFound("Item", id, param);
        found.bytes ??= bytesOf(found.item);
        grow(found.bytes);
        resolved.push(found.item);
      }
      own = resolved;
      expanded = [...history, ...resolved];
      expandedBytes = total;
      const rest = { ...body };
      delete rest.previous_response_id;
      return { ...rest, input: expanded };
    },
  };
  // store: false keeps nothing; with the store off nothing is kept either.
  if (store && body.store !== false) {
    session.commit = async (rendered) => {
      const record: StoredResponse = {
        response: rendered,
        items: [...expanded, ...arr(rendered.output).map(obj)],
        input: own,
      };
      await store.put(accountId, String(rendered.id), record as unknown as Json);
    };
  }
  return session;
}

/** The Responses API's answers about a kept response: the Response, its deletion, its input items (a page). */
export function renderStoredResponse(
  op: StoredOperation,
  id: string,
  record: Json,
  query: URLSearchParams | null,
): unknown {
  if (op === "delete") return { id, object: "response", deleted: true };
  const rec = record as unknown as StoredResponse;
  if (op === "retrieve") return rec.response;
  // Items that came without an id get one derived from the response's, stable across reads.
  const core = id.replace(/^resp_/, "");
  let items = (rec.input ?? []).map((item, i) => ({ ...item, id: str(item.id) ?? `msg_${core}_in${i}` }));
  if (query?.get("order") !== "asc") items = items.reverse();
  const after = query?.get("after");
  if (after) items = items.slice(items.findIndex((i) => i.id === after) + 1);
  const limit = Math.min(100, Math.max(1, Number(query?.get("limit") ?? 20) || 20));
  const data = items.slice(0, limit);
  return {
    object: "list",
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: items.length > limit,
  };
}
