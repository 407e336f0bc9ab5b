// OpenAI Responses API answers: canonical → the client's Response object, the upstream's Response object →
// canonical. Ids the gateway hands out are derived from the request id (resp_<id>, and msg_/rs_/fc_<id>_<n>
// for output items) so that an item reference can be traced back to the stored response it came from.

import { namespacesOf } from "./request.ts";
import { type AssistantPart, type CanonicalResponse, type FinishReason, type Usage, emptyUsage } from "../canonical.ts";
import { type Json, arr, nowSeconds, count, obj, str } from "../shared.ts";
import type { ClientResponseContext } from "../types.ts";

/** The core of the gateway's ids for one call: the request id without its prefix. */
export const idCore = (requestId: string): string => requestId.replace(/^req_/, "");
export const responseIdOf = (requestId: string): string => `resp_${idCore(requestId)}`;

/** The response id an item id of the gateway's belongs to, or null for an id it did not hand out. */
export function responseIdOfItem(itemId: string): string | null {
  const m = /^(?:msg|rs|fc)_([0-9a-f]+)_\d+$/.exec(itemId);
  return m ? `resp_${m[1]}` : null;
}

export const responsesUsage = (u: Usage): Json => ({
  input_tokens: u.promptTokens,
  input_tokens_details: { cached_tokens: u.cachedTokens },
  output_tokens: u.completionTokens,
  output_tokens_details: { reasoning_tokens: u.reasoningTokens },
  total_tokens: u.promptTokens + u.completionTokens,
});

/** No usage (absent or null) reads as zeros; a report that is there but malformed has NaN counts (see count). */
export function usageOfResponses(u: unknown): Usage {
  if (u === undefined || u === null) return emptyUsage();
  const o = obj(u);
  return {
    promptTokens: count(o.input_tokens, true),
    completionTokens: count(o.output_tokens, true),
    reasoningTokens: count(obj(o.output_tokens_details).reasoning_tokens),
    cachedTokens: count(obj(o.input_tokens_details).cached_tokens),
  };
}

/** The Response's status (and why it is incomplete) for a finish reason. */
export function statusOf(reason: FinishReason): {
  status: "completed" | "incomplete" | "failed";
  incomplete: Json | null;
} {
  if (reason === "length") return { status: "incomplete", incomplete: { reason: "max_output_tokens" } };
  if (reason === "content_filter") return { status: "incomplete", incomplete: { reason: "content_filter" } };
  if (reason === "error") return { status: "failed", incomplete: null };
  return { status: "completed", incomplete: null };
}

export function finishOfResponses(status: unknown, incomplete: unknown, hasToolCalls: boolean): FinishReason {
  if (status === "incomplete") return str(obj(incomplete).reason) === "content_filter" ? "content_filter" : "length";
  if (status === "failed") return "error";
  return hasToolCalls ? "tool_calls" : "stop";
}

/** A Response object without output or usage yet, echoing the request's settings as OpenAI does. */
export function responseShell(ctx: ClientResponseContext, id: string, createdAt: number, status: string): Json {
  const b = ctx.request ?? {};
  const reasoning = obj(b.reasoning);
  return {
    id,
    object: "response",
    created_at: createdAt,
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: b.instructions ?? null,
    max_output_tokens: b.max_output_tokens ?? null,
    model: ctx.model,
    output: [],
    parallel_tool_calls: b.parallel_tool_calls ?? true,
    previous_response_id: b.previous_response_id ?? null,
    reasoning: { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null },
    service_tier: "default",
    store: ctx.commit !== undefined,
    temperature: b.temperature ?? 1,
    text: { format: obj(b.text).format ?? { type: "text" } },
    tool_choice: b.tool_choice ?? "auto",
    tools: b.tools ?? [],
    top_p: b.top_p ?? 1,
    truncation: b.truncation ?? "disabled",
    usage: null,
    user: b.user ?? null,
    metadata: b.metadata ?? {},
  };
}

export const messageItem = (id: string, text: string, status = "completed"): Json => ({
  type: "message",
  id,
  status,
  role: "assistant",
  content: [{ type: "output_text", text, annotations: [], logprobs: [] }],
});

export const reasoningItem = (id: string, text: string, signature?: string): Json => ({
  type: "reasoning",
  id,
  summary: text === "" ? [] : [{ type: "summary_text", text }],
  ...(signature ? { encrypted_content: signature } : {}),
});

export const functionCallItem = (
  id: string,
  callId: string,
  name: string,
  args: string,
  status = "completed",
  namespace?: string,
): Json => ({
  type: "function_call",
  id,
  call_id: callId,
  name,
  ...(namespace !== undefined ? { namespace } : {}),
  arguments: args,
  status,
});

/** Flat upstream function names back to the client's namespaced tools (see namespacesOf in request.ts). */
export type Namespaces = ReadonlyMap<string, { namespace: string; name: string }>;

/** Canonical parts → output items, in order; adjacent text (or thinking) parts share one item. */
export function outputItems(parts: readonly AssistantPart[], core: string, namespaces?: Namespaces): Json[] {
  const items: Json[] = [];
  let last: { kind: "text" | "thinking"; item: Json } | null = null;
  for (const p of parts) {
    const id = (prefix: string) => `${prefix}_${core}_${items.length}`;
    if (p.type === "text") {
      if (last?.kind === "text") {
        const c = obj(arr(last.item.content)[0]);
        c.text = String(c.text) + p.text;
      } else {
        last = { kind: "text", item: messageItem(id("msg"), p.text) };
        items.push(last.item);
      }
    } else if (p.type === "thinking") {
      if (last?.kind === "thinking" && !last.item.encrypted_content) {
        const s = obj(arr(last.item.summary)[0]);
        if (arr(last.item.summary).length === 0) last.item.summary = [{ type: "summary_text", text: p.text }];
        else s.text = String(s.text) + p.text;
        if (p.signature) last.item.encrypted_content = p.signature;
      } else {
        last = { kind: "thinking", item: reasoningItem(id("rs"), p.text, p.signature) };
        items.push(last.item);
      }
    } else {
      last = null;
      // A call's own signature (Gemini's thoughtSignature) is reasoning state: a reasoning item with only
      // encrypted_content, right before the call, carries it out and back (see callSignature in request.ts).
      if (p.signature) items.push(reasoningItem(id("rs"), "", p.signature));
      const ns = namespaces?.get(p.name);
      items.push(functionCallItem(id("fc"), p.id, ns?.name ?? p.name, p.arguments, "completed", ns?.namespace));
    }
  }
  return items;
}

/** The output_text convenience field the SDKs compute: every output_text of every message, joined. */
export const outputText = (items: Json[]): string =>
  items
    .filter((i) => i.type === "message")
    .flatMap((i) => arr(i.content).map((c) => str(obj(c).text) ?? ""))
    .join("");

export function renderResponsesResponse(res: CanonicalResponse, ctx: ClientResponseContext): Json {
  const { status, incomplete } = statusOf(res.finishReason);
  const out = responseShell(ctx, responseIdOf(ctx.requestId), res.created, status);
  out.output = outputItems(res.content, idCore(ctx.requestId), namespacesOf(ctx.request));
  out.incomplete_details = incomplete;
  out.usage = responsesUsage(res.usage);
  return out;
}

export function partsOfOutput(output: unknown): AssistantPart[] {
  const content: AssistantPart[] = [];
  for (const raw of arr(output)) {
    const item = obj(raw);
    if (item.type === "message") {
      const text = arr(item.content)
        .map((c) => str(obj(c).text) ?? str(obj(c).refusal) ?? "")
        .join("");
      if (text) content.push({ type: "text", text });
    } else if (item.type === "reasoning") {
      const text = [...arr(item.summary), ...arr(item.content)].map((s) => str(obj(s).text) ?? "").join("\n\n");
      const signature = str(item.encrypted_content);
      if (text || signature) content.push({ type: "thinking", text, ...(signature ? { signature } : {}) });
    } else if (item.type === "function_call") {
      content.push({
        type: "tool_call",
        id: str(item.call_id) ?? str(item.id) ?? "",
        name: str(item.name) ?? "",
        arguments: str(item.arguments) ?? "",
      });
    }
  }
  return content;
}

export function parseResponsesResponse(body: unknown): CanonicalResponse {
  const b = obj(body);
  const content = partsOfOutput(b.output);
  return {
    id: str(b.id) ?? "",
    model: str(b.model) ?? "",
    created: typeof b.created_at === "number" ? b.created_at : nowSeconds(),
    content,
    finishReason: finishOfResponses(
      b.status,
      b.incomplete_details,
      content.some((p) => p.type === "tool_call"),
    ),
    usage: usageOfResponses(b.usage),
  };
}
