import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { CanonicalRequest } from "../canonical.ts";
import { SseParser } from "../sse.ts";
import { openAIPassthrough } from "./passthrough.ts";

// The OpenAI stream relay reads token chunks by scanning their bytes (chunk-scan.ts) and parses only the
// events that may carry usage or an error. Whatever the upstream sends and however its bytes are split, the
// client must get what parsing every event gives: the same events (the client's model name, the gateway's
// usage hidden when the client did not ask), the same usage and the same count of delivered characters. The
// oracle below is that plain reading: every event JSON.parse'd.

const CLIENT_MODEL = "m-1";
const REQUEST_ID = "req_0123456789abcdef01234567";

interface Expected {
  events: unknown[];
  usage: { promptTokens: number; completionTokens: number } | null;
  chars: number;
}

type Obj = Record<string, unknown>;

function oracle(text: string, includeUsage: boolean): Expected {
  const out: unknown[] = [];
  let usage: Expected["usage"] = null;
  let chars = 0;
  let error = false;
  let done = false;
  const parser = new SseParser();
  for (const ev of [...parser.push(Buffer.from(text)), ...parser.flush()]) {
    if (ev.data === "[DONE]") {
      done = true;
      continue;
    }
    if (error) continue;
    let chunk: Obj;
    try {
      chunk = JSON.parse(ev.data) as Obj;
    } catch {
      continue;
    }
    if (chunk.error) {
      error = true;
      out.push("error");
      continue;
    }
    const u = chunk.usage as Obj | null | undefined;
    if (u) usage = { promptTokens: u.prompt_tokens as number, completionTokens: u.completion_tokens as number };
    const choices = (chunk.choices ?? []) as Obj[];
    for (const c of choices) {
      const d = c.delta as Obj | undefined;
      if (!d) continue;
      chars += ((d.content as string | null) ?? "").length + ((d.reasoning_content as string | null) ?? "").length;
      for (const t of (d.tool_calls ?? []) as Obj[]) chars += ((t.function as Obj).arguments as string).length;
    }
    if (!includeUsage && "usage" in chunk) {
      if (choices.length === 0 && u) continue;
      delete chunk.usage;
    }
    if (typeof chunk.model === "string") chunk.model = CLIENT_MODEL;
    out.push(chunk);
  }
  if (!error && (done || usage)) out.push("[DONE]");
  return { events: out, usage, chars };
}

function relay(parts: Uint8Array[], includeUsage: boolean): Expected {
  const req: CanonicalRequest = {
    model: CLIENT_MODEL,
    system: [],
    messages: [],
    stream: true,
    ...(includeUsage ? { streamIncludeUsage: true } : {}),
  };
  const reader = openAIPassthrough.createStream(CLIENT_MODEL, REQUEST_ID, req);
  const written: Buffer[] = [];
  for (const p of parts) {
    const o = reader.push(p);
    written.push(typeof o === "string" ? Buffer.from(o) : Buffer.from(o.buffer, o.byteOffset, o.byteLength));
  }
  written.push(Buffer.from(reader.end()));
  const events = new SseParser().push(Buffer.concat(written)).map((e) => {
    if (e.data === "[DONE]") return "[DONE]";
    const parsed = JSON.parse(e.data) as Obj;
    return parsed.error ? "error" : parsed;
  });
  const u = reader.usage;
  return {
    events,
    usage: u && { promptTokens: u.promptTokens, completionTokens: u.completionTokens },
    chars: reader.deliveredChars,
  };
}

// Text that trips a byte scanner: quotes, backslashes, key names, multi-byte UTF-8 (2, 3 and 4 bytes),
// control characters (written as \u escapes).
const text = fc.string({
  unit: fc.constantFrom("a", " ", "é", "€", "😀", '"', "\\", "\n", "\u0001", '"model":', '"usage":', "content", "{"),
  maxLength: 8,
});
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const delta = fc.record(
  {
    role: maybe(fc.constant("assistant")),
    content: maybe(fc.option(text, { nil: null })),
    reasoning_content: maybe(fc.option(text, { nil: null })),
    tool_calls: maybe(
      fc.array(fc.record({ index: fc.nat(3), function: fc.record({ name: maybe(text), arguments: text }) }), {
        maxLength: 2,
      }),
    ),
  },
  { requiredKeys: [] },
);
const usage = fc.record({ prompt_tokens: fc.nat(1000), completion_tokens: fc.nat(1000), total_tokens: fc.nat(2000) });
const chunk = fc.record(
  {
    id: fc.constant("chatcmpl-1"),
    object: fc.constant("chat.completion.chunk"),
    model: fc.constantFrom("up-model", CLIENT_MODEL, "modèle-ü"),
    choices: fc.array(
      fc.record({
        index: fc.nat(2),
        delta,
        logprobs: fc.constant(null),
        finish_reason: fc.constantFrom(null, "stop"),
      }),
      { maxLength: 2 },
    ),
    usage: maybe(fc.option(usage, { nil: null })),
    system_fingerprint: maybe(text),
    obfuscation: maybe(text),
  },
  { requiredKeys: ["id", "object", "model", "choices"] },
);
// How the upstream writes JSON: compact, with spaces after : and , (Python's default), or with every
// non-ASCII character escaped (Python's ensure_ascii).
const style = fc.constantFrom("compact", "spaced", "ascii");
const write = (o: unknown, s: string) => {
  const json = JSON.stringify(o);
  if (s === "compact") return json;
  if (s === "spaced") return JSON.stringify(o, null, 1).replace(/\n */g, " ");
  return json.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
};
// A run of token chunks as an upstream writes them: one chunk's shape again and again, only its string of
// output (and OpenAI's obfuscation padding, when there is one) changing: the relay's template path. Sometimes
// with no string or a second choice.
const run = fc
  .tuple(chunk, style, fc.array(fc.tuple(fc.option(text, { nil: undefined }), text), { minLength: 1, maxLength: 6 }))
  .map(([c, s, texts]) =>
    texts
      .map(([t, pad]) => {
        const choice = { index: 0, delta: { content: t }, logprobs: null, finish_reason: null };
        const choices = t === "\\" ? [choice, choice] : [choice];
        return `data: ${write({ ...c, choices, ...(c.obfuscation === undefined ? {} : { obfuscation: pad }) }, s)}\n\n`;
      })
      .join(""),
  );
const event = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(chunk, style).map(([c, s]) => `data: ${write(c, s)}\n\n`) },
  { weight: 4, arbitrary: run },
  { weight: 1, arbitrary: fc.constant('data: {"error":{"message":"boom"}}\n\n') },
  { weight: 1, arbitrary: fc.constant(": keep-alive\n\n") },
  { weight: 1, arbitrary: fc.constant("data: not json\n\n") },
  { weight: 1, arbitrary: fc.tuple(chunk, style).map(([c, s]) => `event: chunk\ndata: ${write(c, s)}\n\n`) },
);
const stream = fc.tuple(
  fc.array(event, { maxLength: 8 }),
  fc.boolean(), // [DONE] at the end
  fc.boolean(), // the last event without its blank line
);

function cut(bytes: Buffer, at: number[]): Buffer[] {
  const points = [...new Set(at.map((n) => n % (bytes.length + 1)))].sort((a, b) => a - b);
  const parts: Buffer[] = [];
  let from = 0;
  for (const p of points) {
    parts.push(bytes.subarray(from, p));
    from = p;
  }
  parts.push(bytes.subarray(from));
  return parts;
}

describe("OpenAI stream relay, byte path against JSON.parse", () => {
  it("gives the same events, usage and delivered characters for any stream and any split", () => {
    fc.assert(
      fc.property(stream, fc.array(fc.nat(), { maxLength: 10 }), fc.boolean(), ([events, done, open], at, include) => {
        let whole = events.join("") + (done ? "data: [DONE]\n\n" : "");
        if (open && whole.endsWith("\n\n")) whole = whole.slice(0, -2);
        const bytes = Buffer.from(whole);
        expect(relay(cut(bytes, at), include)).toEqual(oracle(whole, include));
      }),
      { numRuns: 2000 },
    );
  });

  it("splits a token chunk and a usage chunk at every byte", () => {
    const whole =
      `data: ${JSON.stringify({ id: "c", model: "up", choices: [{ index: 0, delta: { content: 'hé😀\\"x' } }], usage: null })}\n\n` +
      `data: ${JSON.stringify({ id: "c", model: "up", choices: [], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } })}\n\n` +
      "data: [DONE]\n\n";
    const bytes = Buffer.from(whole);
    for (const include of [true, false])
      for (let i = 0; i <= bytes.length; i++)
        expect(relay([bytes.subarray(0, i), bytes.subarray(i)], include)).toEqual(oracle(whole, include));
  });

  it("passes an unchanged chunk on as the upstream's own bytes", () => {
    const req: CanonicalRequest = { model: "up", system: [], messages: [], stream: true };
    const reader = openAIPassthrough.createStream("up", REQUEST_ID, req);
    const bytes = Buffer.from(`data: ${JSON.stringify({ id: "c", model: "up", choices: [] })}\n\n`);
    expect(reader.push(bytes)).toBe(bytes);
  });
});
