// The provider-side ids of the Responses API: those a request names (previous_response_id, the conversation,
// item references and reasoning items without their content, which the provider looks up in what it stored) and those
// an answer hands out (the response's id and its output items' ids). See conversations/provider-ids.ts.

import { type Json, arr, obj, str } from "../shared.ts";

/**
 * An input item the provider fills in from what it stored: a reference, or a reasoning item without its
 * encrypted content. Items that carry their own content may carry ids the client made up (the Codex CLI sends
 * `msg_<uuid>`) and tell the provider nothing it did not already have.
 */
const resolvedByProvider = (item: Json): boolean =>
  item.type === "item_reference" || (item.type === "reasoning" && typeof item.encrypted_content !== "string");

/** Ids the provider would resolve for this request, each with the parameter that named it. */
export function namedProviderIds(body: Json): { id: string; param: string }[] {
  const named: { id: string; param: string }[] = [];
  const previous = str(body.previous_response_id);
  if (previous !== undefined) named.push({ id: previous, param: "previous_response_id" });
  const conversation = typeof body.conversation === "string" ? body.conversation : str(obj(body.conversation).id);
  if (conversation !== undefined) named.push({ id: conversation, param: "conversation" });
  if (Array.isArray(body.input)) {
    for (const [i, raw] of body.input.entries()) {
      const item = obj(raw);
      const id = str(item.id);
      if (id !== undefined && resolvedByProvider(item)) named.push({ id, param: `input[${i}].id` });
    }
  }
  return named;
}

/** The ids a Response hands out: its own and its output items'. */
export function providerIdsOfResponse(response: Json): string[] {
  const ids: string[] = [];
  const id = str(response.id);
  if (id !== undefined) ids.push(id);
  for (const item of arr(response.output)) {
    const itemId = str(obj(item).id);
    if (itemId !== undefined) ids.push(itemId);
  }
  return ids;
}

/** The ids one stream event hands out, as early as the stream shows them. */
export function providerIdsOfEvent(type: string, data: Json): string[] {
  if (type.startsWith("response.output_item.")) {
    const id = str(obj(data.item).id);
    return id === undefined ? [] : [id];
  }
  if (data.response !== undefined && type.startsWith("response.")) return providerIdsOfResponse(obj(data.response));
  return [];
}
