// Conversation state for the Responses API. A request may continue an earlier response (previous_response_id)
// or name earlier output items (item_reference). Toward an `openai-responses` upstream these pass through and
// the provider keeps the state; toward any other upstream the gateway resolves them from its own store (only
// when the operator turned it on: the specification keeps business data out of the gateway by default) and
// keeps each answer, with the conversation that led to it, before telling the client it is complete.

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

export function openResponsesSession(body: Json, store: ConversationStore | null, accountId: string): ClientSession {
  const previousId = str(body.previous_response_id) ?? null;
  const input = inputItems(body.input);
  const refersToState = previousId !== null || input.some((i) => itemType(i) === "item_reference");
  let expanded: Json[] = input;
  let own: Json[] = input;
  const load = async (id: string, param: string): Promise<StoredResponse> => {
    const rec = await store!.get(accountId, id);
    if (!rec) throw notFound("Previous response", id, param);
    return rec as unknown as StoredResponse;
  };
  const fresh = input.filter((i) => itemType(i) !== "item_reference");
  const withoutState: Json = { ...body, input: fresh.length === 0 ? "" : fresh };
  delete withoutState.previous_response_id;
  const session: ClientSession = {
    refersToState,
    withoutState,
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
      const history = previousId !== null ? (await load(previousId, "previous_response_id")).items : [];
      const cache = new Map<string, StoredResponse>();
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
        let rec = cache.get(responseId);
        if (!rec) {
          rec = await load(responseId, param).catch(() => {
            throw notFound("Item", id, param);
          });
          cache.set(responseId, rec);
        }
        const found = [...arr(rec.response.output), ...rec.items].map(obj).find((x) => x.id === id);
        if (!found) throw notFound("Item", id, param);
        resolved.push(found);
      }
      own = resolved;
      expanded = [...history, ...resolved];
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
