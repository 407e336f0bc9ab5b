// A scripted two-step "model" for agent tests, for any of the mocks: asked with a tool it can call, it calls it;
// asked again with that call's result in the conversation, it answers with text built from the result. An agent
// that really ran the tool and sent its output back therefore gets an answer naming what the tool returned.
// Requests that do not offer the tool (an agent's side calls, say) get a plain text answer.

import type { MockReply, MockScript, MockToolCall, MockUsage, RecordedRequest } from "./script.ts";

/** A tool result as an upstream received it, in any of the four wire formats. */
export interface ReceivedToolResult {
  /** The call id the result answers (OpenAI chat, Anthropic, Responses; Gemini's optional functionResponse.id). */
  callId?: string;
  /** Gemini's functionResponse.name (the other formats name the call by id only: see toolCallsOf). */
  name?: string;
  /** The result's content flattened to text. */
  output: string;
}

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === "object" && x !== null && !Array.isArray(x);
const list = (x: unknown): unknown[] => (Array.isArray(x) ? x : []);
/** Content as each vendor allows it: a string, a list of parts with text, or JSON (Gemini's response object). */
const text = (x: unknown): string =>
  typeof x === "string"
    ? x
    : Array.isArray(x)
      ? x.map((p) => (isObj(p) && typeof p.text === "string" ? p.text : text(isObj(p) ? p.content : p))).join("")
      : x === undefined
        ? ""
        : JSON.stringify(x);

/** The tool results in a recorded generation request, whichever vendor's format its URL says it is. */
export function toolResultsOf(req: RecordedRequest): ReceivedToolResult[] {
  const body = isObj(req.body) ? req.body : {};
  const path = new URL(req.url, "http://mock").pathname;
  if (path.endsWith("/chat/completions")) {
    return list(body.messages)
      .filter((m): m is Obj => isObj(m) && m.role === "tool")
      .map((m) => ({ callId: String(m.tool_call_id), output: text(m.content) }));
  }
  if (path.endsWith("/messages")) {
    return list(body.messages)
      .flatMap((m) => (isObj(m) ? list(m.content) : []))
      .filter((b): b is Obj => isObj(b) && b.type === "tool_result")
      .map((b) => ({ callId: String(b.tool_use_id), output: text(b.content) }));
  }
  if (path.endsWith("/responses")) {
    return list(body.input)
      .filter((i): i is Obj => isObj(i) && i.type === "function_call_output")
      .map((i) => ({ callId: String(i.call_id), output: text(i.output) }));
  }
  if (/:(stream)?generateContent$/i.test(path)) {
    return list(body.contents)
      .flatMap((c) => (isObj(c) ? list(c.parts) : []))
      .flatMap((p) => (isObj(p) && isObj(p.functionResponse) ? [p.functionResponse] : []))
      .map((f) => ({
        ...(typeof f.id === "string" ? { callId: f.id } : {}),
        name: String(f.name),
        output: text(f.response),
      }));
  }
  return [];
}

/** The tool calls in a recorded request's history (the model's earlier turns): id (Gemini's is optional) and name. */
export function toolCallsOf(req: RecordedRequest): { id?: string; name: string }[] {
  const body = isObj(req.body) ? req.body : {};
  const path = new URL(req.url, "http://mock").pathname;
  if (path.endsWith("/chat/completions")) {
    return list(body.messages)
      .flatMap((m) => (isObj(m) && m.role === "assistant" ? list(m.tool_calls) : []))
      .filter(isObj)
      .map((c) => ({ id: String(c.id), name: String(isObj(c.function) ? c.function.name : "") }));
  }
  if (path.endsWith("/messages")) {
    return list(body.messages)
      .flatMap((m) => (isObj(m) && m.role === "assistant" ? list(m.content) : []))
      .filter((b): b is Obj => isObj(b) && b.type === "tool_use")
      .map((b) => ({ id: String(b.id), name: String(b.name) }));
  }
  if (path.endsWith("/responses")) {
    return list(body.input)
      .filter((i): i is Obj => isObj(i) && i.type === "function_call")
      .map((i) => ({ id: String(i.call_id), name: String(i.name) }));
  }
  if (/:(stream)?generateContent$/i.test(path)) {
    return list(body.contents)
      .flatMap((c) => (isObj(c) ? list(c.parts) : []))
      .flatMap((p) => (isObj(p) && isObj(p.functionCall) ? [p.functionCall] : []))
      .map((f) => ({ ...(typeof f.id === "string" ? { id: f.id } : {}), name: String(f.name) }));
  }
  return [];
}

/** The names of the function tools a recorded generation request offers, in any of the four formats. */
export function offeredToolNames(req: RecordedRequest): string[] {
  const body = isObj(req.body) ? req.body : {};
  return list(body.tools).flatMap((t) => {
    if (!isObj(t)) return [];
    if (isObj(t.function)) return [String(t.function.name)]; // OpenAI chat
    if (Array.isArray(t.functionDeclarations)) return t.functionDeclarations.map((f) => String((f as Obj).name));
    return typeof t.name === "string" ? [t.name] : []; // Anthropic, Responses
  });
}

export interface ToolRoundTrip {
  /** The call the model makes; give it an id, so the test can look for that id in the result. */
  call: MockToolCall & { id: string };
  /** The final answer, from the result's text. */
  answer: (output: string) => string;
  /** Usage of the first (tool call) and second (final answer) reply. */
  usage: [MockUsage, MockUsage];
}

/**
 * The script: a request that carries a result for the call gets the final answer; one that offers the tool
 * gets the call; anything else gets a short text (with the final answer's usage, so every call is counted).
 */
export function toolRoundTrip(t: ToolRoundTrip): MockScript {
  return (req): MockReply => {
    const results = toolResultsOf(req);
    const calls = toolCallsOf(req);
    // Like the vendors' APIs, a result must answer a call in the conversation: by id (Gemini: by name).
    const orphan = results.find((r) =>
      r.callId !== undefined && r.name === undefined ? !calls.some((c) => c.id === r.callId) : false,
    );
    if (orphan)
      return { error: { status: 400, message: `No tool call found for the tool result with id '${orphan.callId}'.` } };
    const result = results.find((r) =>
      r.name !== undefined ? r.name === t.call.name : calls.some((c) => c.id === r.callId && c.name === t.call.name),
    );
    if (result) return { text: splitAnswer(t.answer(result.output)), usage: t.usage[1] };
    if (offeredToolNames(req).includes(t.call.name)) return { toolCalls: [t.call], usage: t.usage[0] };
    return { text: ["ok"], usage: t.usage[1] };
  };
}

/** The answer in a few stream chunks, as a model streams it. */
const splitAnswer = (s: string): string[] => s.split(/(?<= )/);
