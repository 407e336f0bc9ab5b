import { createServer, type ServerResponse } from "node:http";
import { listen } from "./script.ts";

// An upstream that answers in any of the four wire formats (OpenAI Chat Completions, Anthropic Messages,
// Gemini, the Responses API), streamed or not, with what well-behaved mocks never send: usage counts of any
// JSON value (10.5, -3, "12", null, 2^60, an object) or none at all, answers of any size, an event that never
// ends, a stream that never finishes. Each request is answered by the next scripted `OddAnswer` (then by
// `fallback`); the path says the protocol, the body's `stream` (or Gemini's streamGenerateContent) whether it
// streams.

export type OddProtocol = "openai" | "anthropic" | "gemini" | "openai-responses";

/** A usage count as sent: any JSON value; `undefined` leaves the field out. */
export type OddCount = unknown;

export interface OddAnswer {
  text?: string[];
  /** the prompt and output counts as sent (the vendor's own field names are chosen by the protocol) */
  prompt?: OddCount;
  completion?: OddCount;
  /** leave the usage object out entirely */
  noUsage?: boolean;
  /** bytes of padding added to the answer's text (a huge answer); streams put it in one text event */
  padBytes?: number;
  /** streams: after the text, an event of this many bytes that never gets its blank line, then the body ends */
  unterminatedBytes?: number;
  /** streams: after the text, keep the stream open (a byte of comment every `drip` ms) until the client goes */
  neverEnd?: { dripMs: number };
  /** the status line waits this long (or until `release` resolves) */
  headDelayMs?: number;
  release?: Promise<unknown>;
  /** streams: the events that carry the usage and the end wait for this */
  holdEnd?: Promise<unknown>;
  /** non-streamed: the body is written in pieces of this size, each after a turn (so it arrives in many chunks) */
  pieceBytes?: number;
}

export interface OddUpstream {
  /** base URLs per protocol, as a route holds them */
  url: Record<OddProtocol, string>;
  queue: OddAnswer[];
  fallback: OddAnswer;
  /** requests whose whole body arrived, in order */
  received: { path: string; bytes: number }[];
  /** streams the upstream had to end because the gateway went away (the stream was still open) */
  aborted: number;
  close(): Promise<void>;
}

const protocolOf = (path: string): OddProtocol | null =>
  path.startsWith("/v1/chat/completions")
    ? "openai"
    : path.startsWith("/v1/messages")
      ? "anthropic"
      : path.startsWith("/v1beta/models/")
        ? "gemini"
        : path.startsWith("/v1/responses")
          ? "openai-responses"
          : null;

function usageOf(p: OddProtocol, a: OddAnswer): Record<string, unknown> {
  const u: Record<string, unknown> = {};
  const [pk, ck] =
    p === "openai"
      ? ["prompt_tokens", "completion_tokens"]
      : p === "gemini"
        ? ["promptTokenCount", "candidatesTokenCount"]
        : ["input_tokens", "output_tokens"];
  if (a.prompt !== undefined) u[pk] = a.prompt;
  if (a.completion !== undefined) u[ck] = a.completion;
  return u;
}

/** Where a non-streamed answer's padding goes: written in pieces, never built whole (see answer). */
const PAD = "\u0000pad\u0000";
const PIECE = "x".repeat(65_536);

const textOf = (a: OddAnswer, streamed = true): string[] => {
  const t = [...(a.text ?? ["Hello", " there"])];
  if (a.padBytes) t.push(streamed ? "x".repeat(a.padBytes) : PAD);
  return t;
};

/** The whole answer of a non-streamed call. */
function json(p: OddProtocol, a: OddAnswer, model: string): string {
  const text = textOf(a, false).join("");
  const usage = a.noUsage ? undefined : usageOf(p, a);
  switch (p) {
    case "openai":
      return JSON.stringify({
        id: "chatcmpl-odd",
        object: "chat.completion",
        created: 1,
        model,
        choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
        usage,
      });
    case "anthropic":
      return JSON.stringify({
        id: "msg_odd",
        type: "message",
        role: "assistant",
        model,
        content: [{ type: "text", text }],
        stop_reason: "end_turn",
        stop_sequence: null,
        usage,
      });
    case "gemini":
      return JSON.stringify({
        candidates: [{ content: { role: "model", parts: [{ text }] }, finishReason: "STOP", index: 0 }],
        usageMetadata: usage,
        modelVersion: model,
      });
    case "openai-responses":
      return JSON.stringify({
        id: "resp_odd",
        object: "response",
        created_at: 1,
        status: "completed",
        model,
        output: [
          {
            type: "message",
            id: "msg_odd",
            status: "completed",
            role: "assistant",
            content: [{ type: "output_text", text, annotations: [] }],
          },
        ],
        usage,
      });
  }
}

/** The events of a streamed answer, each framed; the last ones carry the usage and the end. */
function events(p: OddProtocol, a: OddAnswer, model: string): { body: string[]; end: string[] } {
  const texts = textOf(a);
  const usage = a.noUsage ? undefined : usageOf(p, a);
  const sse = (data: unknown, event?: string) => `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`;
  switch (p) {
    case "openai": {
      const chunk = (delta: unknown, finish: string | null = null) =>
        sse({
          id: "c",
          object: "chat.completion.chunk",
          created: 1,
          model,
          choices: [{ index: 0, delta, finish_reason: finish }],
        });
      return {
        body: [chunk({ role: "assistant", content: "" }), ...texts.map((t) => chunk({ content: t }))],
        end: [
          chunk({}, "stop"),
          ...(usage ? [sse({ id: "c", object: "chat.completion.chunk", created: 1, model, choices: [], usage })] : []),
          "data: [DONE]\n\n",
        ],
      };
    }
    case "anthropic": {
      const start = { ...usageOf(p, a), output_tokens: 1 };
      return {
        body: [
          sse(
            {
              type: "message_start",
              message: {
                id: "msg_odd",
                type: "message",
                role: "assistant",
                model,
                content: [],
                usage: a.noUsage ? undefined : start,
              },
            },
            "message_start",
          ),
          sse(
            { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
            "content_block_start",
          ),
          ...texts.map((t) =>
            sse(
              { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: t } },
              "content_block_delta",
            ),
          ),
        ],
        end: [
          sse({ type: "content_block_stop", index: 0 }, "content_block_stop"),
          sse(
            {
              type: "message_delta",
              delta: { stop_reason: "end_turn", stop_sequence: null },
              usage: a.noUsage ? undefined : { output_tokens: a.completion },
            },
            "message_delta",
          ),
          sse({ type: "message_stop" }, "message_stop"),
        ],
      };
    }
    case "gemini": {
      const chunk = (text: string, last: boolean) =>
        `data: ${JSON.stringify({
          candidates: [
            { content: { role: "model", parts: [{ text }] }, ...(last ? { finishReason: "STOP" } : {}), index: 0 },
          ],
          usageMetadata: usage,
          modelVersion: model,
        })}\r\n\r\n`;
      return { body: texts.map((t) => chunk(t, false)), end: [chunk("", true)] };
    }
    case "openai-responses": {
      let seq = 0;
      const ev = (type: string, payload: Record<string, unknown>) =>
        sse({ type, sequence_number: seq++, ...payload }, type);
      const response = (status: string, u: unknown) => ({
        id: "resp_odd",
        object: "response",
        created_at: 1,
        status,
        model,
        output: [],
        usage: u,
      });
      const at = { item_id: "msg_odd", output_index: 0, content_index: 0 };
      return {
        body: [
          ev("response.created", { response: response("in_progress", null) }),
          ev("response.output_item.added", {
            output_index: 0,
            item: { type: "message", id: "msg_odd", status: "in_progress", role: "assistant", content: [] },
          }),
          ...texts.map((t) => ev("response.output_text.delta", { ...at, delta: t })),
        ],
        end: [ev("response.completed", { response: response("completed", usage ?? null) })],
      };
    }
  }
}

export async function startOddUpstream(): Promise<OddUpstream> {
  const mock: OddUpstream = {
    url: { openai: "", anthropic: "", gemini: "", "openai-responses": "" },
    queue: [],
    fallback: { prompt: 10, completion: 5 },
    received: [],
    aborted: 0,
    close: async () => undefined,
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      const path = req.url ?? "";
      mock.received.push({ path, bytes: raw.length });
      const p = protocolOf(path);
      if (p === null) {
        res.writeHead(404).end();
        return;
      }
      let body: { model?: unknown; stream?: unknown } = {};
      try {
        body = JSON.parse(raw.toString("utf8")) as typeof body;
      } catch {
        // answered all the same
      }
      const model = typeof body.model === "string" ? body.model : "odd-model";
      const stream = p === "gemini" ? path.includes(":streamGenerateContent") : body.stream === true;
      const a = mock.queue.shift() ?? mock.fallback;
      void answer(res, p, a, model, stream).catch(() => res.destroy());
    });
  });
  const answer = async (res: ServerResponse, p: OddProtocol, a: OddAnswer, model: string, stream: boolean) => {
    if (a.headDelayMs) await new Promise((r) => setTimeout(r, a.headDelayMs));
    if (a.release) await a.release;
    if (!stream) {
      const text = json(p, a, model);
      res.writeHead(200, { "content-type": "application/json" });
      if (a.padBytes) {
        // The padding goes out a piece at a time, so that the mock (in the test's process) holds no huge string.
        const at = text.indexOf(JSON.stringify(PAD).slice(1, -1));
        const pad = JSON.stringify(PAD).length - 2;
        const write = (s: string) =>
          res.destroyed || res.write(s) ? Promise.resolve() : new Promise((r) => res.once("drain", r).once("close", r));
        await write(text.slice(0, at));
        for (let left = a.padBytes; left > 0 && !res.destroyed; left -= PIECE.length)
          await write(left >= PIECE.length ? PIECE : PIECE.slice(0, left));
        return void res.end(text.slice(at + pad));
      }
      if (!a.pieceBytes) return void res.end(text);
      for (let i = 0; i < text.length; i += a.pieceBytes) {
        if (res.destroyed) return;
        if (!res.write(text.slice(i, i + a.pieceBytes))) await new Promise((r) => res.once("drain", r));
        await new Promise((r) => setImmediate(r));
      }
      return void res.end();
    }
    res.writeHead(200, { "content-type": "text/event-stream" });
    const { body, end } = events(p, a, model);
    const write = async (s: string) => {
      if (res.destroyed) return;
      if (!res.write(s)) await new Promise((r) => res.once("drain", r).once("close", r));
    };
    for (const e of body) await write(e);
    if (a.unterminatedBytes) {
      // One event that never gets its blank line: `data: xxxx…`, written in 64 KB pieces.
      await write("data: ");
      for (let left = a.unterminatedBytes; left > 0 && !res.destroyed; left -= 65_536)
        await write("x".repeat(Math.min(65_536, left)));
      return void res.end();
    }
    if (a.neverEnd) {
      const dripMs = a.neverEnd.dripMs;
      await new Promise<void>((resolve) => {
        const t = setInterval(() => {
          if (res.destroyed) {
            clearInterval(t);
            mock.aborted++;
            resolve();
          } else res.write(":\n\n");
        }, dripMs);
      });
      return;
    }
    if (a.holdEnd) await a.holdEnd;
    for (const e of end) await write(e);
    res.end();
  };
  const { origin, close } = await listen(server, 0);
  mock.url = {
    openai: `${origin}/v1`,
    anthropic: `${origin}/v1`,
    gemini: `${origin}/v1beta`,
    "openai-responses": `${origin}/v1`,
  };
  mock.close = close;
  return mock;
}
