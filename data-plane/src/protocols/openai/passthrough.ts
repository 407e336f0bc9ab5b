// OpenAI client to OpenAI upstream, the common case: no translation. The upstream's events go out byte for
// byte unless the model name must be put back or the usage chunk the gateway asked for
// (stream_options.include_usage) must be hidden from a client that did not ask. Token chunks are read by a
// scan of their bytes (chunk-scan.ts); only events that may carry usage or an error are JSON.parse'd.

import { GatewayError } from "../../errors.ts";
import type { Usage } from "../canonical.ts";
import { parseUpstreamJson, readHead } from "../passthrough.ts";
import { SseParser, eventTooLarge, maxEventCharsNow, parseEvent } from "../sse.ts";
import { tokensFromChars } from "../../usage/record.ts";
import type { Passthrough, PassthroughStream } from "../types.ts";
import { renderOpenAIError } from "./errors.ts";
import { chunkUsage, usageOfOpenAI } from "./response.ts";
import { usableUsage } from "../shared.ts";
import { replaceModelField } from "./model-field.ts";
import { type ChunkScan, lastStringEnd, scanChunk, stringLength } from "./chunk-scan.ts";

/** Text as a byte string (one character per UTF-8 byte), and back. */
const bytesOf = (s: string) => (s === "" ? "" : Buffer.from(s).toString("latin1"));
const fromBytes = (b: string) => Buffer.from(b, "latin1").toString();

interface OpenAIUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
}

// The usage is read as the translating path reads it: a count that is not a non-negative safe integer makes
// the report malformed (NaN counts), and the call is billed by estimate (see shared.ts, count).
const usageOf = (u: OpenAIUsage): Usage => usageOfOpenAI(u);

// OpenAI's prompt_tokens already includes cached_tokens (reads); it reports no cache writes.

interface Chunk {
  model?: string;
  usage?: OpenAIUsage | null;
  choices?: {
    delta?: {
      content?: string | null;
      reasoning_content?: string | null;
      tool_calls?: { function?: { arguments?: string } }[];
    };
  }[];
}

/** OpenAI's own headers (OpenAI-Beta …), but not the organisation and project, which belong to the client's account. */
export const forwardsOpenAIHeader = (name: string): boolean =>
  name.startsWith("openai-") && name !== "openai-organization" && name !== "openai-project";

export const openAIPassthrough: Passthrough = {
  head(body) {
    const head = readHead(body);
    const options = body.stream_options;
    if (head.stream && options !== null && typeof options === "object" && "include_usage" in options)
      head.streamIncludeUsage = (options as { include_usage?: unknown }).include_usage === true;
    return head;
  },
  forwardsHeader: forwardsOpenAIHeader,
  path: () => "/chat/completions",
  body(raw, body, req, upstreamModel, upstream) {
    // An upstream that refuses stream_options (UpstreamTraits.streamUsageUnasked: Mistral) is never sent the
    // client's, and streams its usage unasked: the gateway learns it all the same, and the relay hides it from
    // clients that did not ask.
    const refusesOptions = upstream?.streamUsageUnasked === true;
    const unchanged = refusesOptions
      ? !Object.hasOwn(body, "stream_options")
      : !req.stream || req.streamIncludeUsage === true;
    // The client's bytes as they are when nothing needs changing: the common case pays no re-serialisation.
    if (upstreamModel === req.model && unchanged) return raw;
    const b: Record<string, unknown> = { ...body, model: upstreamModel };
    // Otherwise always ask for usage: it is what the call is billed by.
    if (refusesOptions) delete b.stream_options;
    else if (req.stream) b.stream_options = { ...(body.stream_options as object | undefined), include_usage: true };
    return JSON.stringify(b);
  },
  readJson(text, clientModel, estimatedPromptTokens) {
    const parsed = parseUpstreamJson(text) as {
      model?: string;
      usage?: OpenAIUsage | null;
      choices?: { message?: { content?: unknown; reasoning_content?: unknown } }[];
    };
    if (parsed.usage && usableUsage(usageOf(parsed.usage))) {
      const body =
        parsed.model === clientModel
          ? text
          : typeof parsed.model === "string"
            ? replaceModelField(text, parsed.model, clientModel)
            : null;
      return {
        body: body ?? JSON.stringify({ ...parsed, model: clientModel }),
        usage: usageOf(parsed.usage),
        exact: true,
        deliveredChars: 0,
      };
    }
    // Every successful response carries usage; when the upstream leaves it out the gateway counts it (the
    // prompt from the request's size, the output from the answer) and the row is flagged estimated.
    let chars = 0;
    for (const c of parsed.choices ?? [])
      chars += String(c.message?.content ?? "").length + String(c.message?.reasoning_content ?? "").length;
    const completion = tokensFromChars(chars);
    const prompt = estimatedPromptTokens;
    parsed.usage = {
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
    } as OpenAIUsage;
    return {
      body: JSON.stringify({ ...parsed, model: clientModel }),
      usage: { promptTokens: prompt, completionTokens: completion, reasoningTokens: 0, cachedTokens: 0 },
      exact: false,
      deliveredChars: chars,
    };
  },
  createStream(clientModel, requestId, req): PassthroughStream {
    const includeUsage = req.streamIncludeUsage === true;
    const parser = new SseParser();
    let sawDone = false;
    let sawUsage = false;
    let usage: Usage | null = null;
    let deliveredChars = 0;
    let error: GatewayError | null = null;
    const relayEvent = (data: string): string => {
      if (data === "[DONE]") {
        sawDone = true;
        return "";
      }
      if (error) return ""; // nothing after an error, as the translating encoders do
      let chunk: Chunk & { error?: { message?: unknown; code?: unknown } };
      try {
        chunk = JSON.parse(data);
      } catch {
        return ""; // not JSON: nothing a client could use
      }
      if (chunk.error) {
        // Re-shaped so that this error, too, carries the request id.
        const message =
          typeof chunk.error.message === "string" ? chunk.error.message : "The upstream reported an error mid-stream.";
        error = new GatewayError("upstream", "upstream_stream_error", `The upstream failed mid-stream: ${message}`);
        return `data: ${renderOpenAIError(error, requestId).body}\n\n`;
      }
      const reported = chunkUsage(chunk) as OpenAIUsage | null | undefined;
      if (reported) {
        sawUsage = true;
        usage = usageOf(reported);
      }
      const choices = chunk.choices ?? [];
      for (const c of choices) {
        const d = c.delta;
        if (!d) continue;
        deliveredChars += (d.content?.length ?? 0) + (d.reasoning_content?.length ?? 0);
        for (const t of d.tool_calls ?? []) deliveredChars += t.function?.arguments?.length ?? 0;
      }
      if (!includeUsage && "usage" in chunk) {
        // The usage the gateway asked for, hidden from a client that did not ask.
        if (choices.length === 0 && chunk.usage) return "";
        delete chunk.usage;
        if (chunk.model !== undefined) chunk.model = clientModel;
        return `data: ${JSON.stringify(chunk)}\n\n`;
      }
      let out = data;
      if (typeof chunk.model === "string" && chunk.model !== clientModel) {
        out = replaceModelField(data, chunk.model, clientModel) ?? JSON.stringify({ ...chunk, model: clientModel });
      }
      return `data: ${out}\n\n`;
    };
    const run = (events: { data: string }[]): string => {
      let out = "";
      for (const ev of events) out += relayEvent(ev.data);
      return out;
    };

    // The byte path (see chunk-scan.ts): the upstream's bytes as a byte string (latin1, one character per
    // byte), events found by their \n\n, each token chunk read by a scan instead of JSON.parse and passed on
    // as it came, the model's value replaced in place. An event the scan cannot read (usage, an error, an
    // event of several lines) goes through relayEvent as text. A stream with a \r in it (other line endings)
    // is handed to SseParser from there on; what is held then starts at an event's beginning.
    const clientModelBytes = bytesOf(JSON.stringify(clientModel));
    let textMode = false;
    let held = "";
    // Bytes that came after `held` and ended no event: kept apart (not scanned again) until one ends.
    let more: string[] = [];
    let heldLength = 0;
    const slow = (raw: string): string => {
      const ev = parseEvent(fromBytes(raw));
      return ev ? bytesOf(relayEvent(ev.data)) : "";
    };
    // A stream's token chunks differ from one another only in their string of output (and OpenAI's
    // obfuscation padding): the last scanned chunk with output is kept as a template, the bytes between those
    // variable strings (segment k ends with string k's opening quote, segment k+1 starts with its closing
    // one), and each segment as it goes out (model replaced, usage cut). An event made of the same segments
    // around strings that each end where the next segment begins has the template's keys and values
    // everywhere else: it needs no scan, only its variable strings walked, and goes out as the edited
    // segments around them. Segments are compared as bytes (Buffer.compare: a memcmp; String#startsWith at
    // an offset was several times slower in a profile of this loop).
    let tplSegs: Buffer[] = [];
    let tplOut: string[] = [];
    let tplCounted: boolean[] = [];
    let tplEdited = false;
    const varFrom: number[] = [];
    const varTo: number[] = [];
    /** The template's match for the event whose data is text[from, end): delivered characters, or -1. */
    const matchTemplate = (text: string, bytes: Buffer, from: number, end: number): number => {
      let p = from;
      let n = 0;
      const last = tplSegs.length - 1;
      for (let k = 0; ; k++) {
        const seg = tplSegs[k]!;
        if (p + seg.length > end || bytes.compare(seg, 0, seg.length, p, p + seg.length) !== 0) return -1;
        p += seg.length;
        if (k === last) return p === end ? n : -1;
        const c = stringLength(text, p - 1);
        if (c === -1) return -1;
        if (tplCounted[k]) n += c;
        varFrom[k] = p;
        p = varTo[k] = lastStringEnd();
      }
    };
    // The edits of the last scan (model value replaced, `"usage":null` cut), applied to data[from, to).
    let model = false;
    let cut = false;
    const edited = (data: string, s: ChunkScan, from: number, to: number): string => {
      let out = "";
      let at = from;
      const apply = (e0: number, e1: number, put: string) => {
        if (e0 < from || e1 > to) return; // not in this part
        out += data.slice(at, e0) + put;
        at = e1;
      };
      // In the order they appear (the two never overlap: a member and a string value elsewhere).
      const usageFirst = cut && (!model || s.usageStart < s.modelStart);
      if (usageFirst) apply(s.usageStart, s.usageEnd, "");
      if (model) apply(s.modelStart, s.modelEnd, clientModelBytes);
      if (cut && !usageFirst) apply(s.usageStart, s.usageEnd, "");
      return out + data.slice(at, to);
    };
    const push = (chunk: Uint8Array): string | Uint8Array => {
      if (textMode) return run(parser.push(chunk));
      const incoming = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      let add: string | null = null;
      if (heldLength !== 0) {
        // Only the new bytes (and the held text's last byte) can end the held event: an event that grows
        // chunk after chunk is not scanned from its start again each time, and is refused past the limit.
        add = incoming.toString("latin1");
        const last = more.length !== 0 ? more[more.length - 1]! : held;
        if (
          add.indexOf("\n\n") === -1 &&
          add.indexOf("\r") === -1 &&
          !(last.charCodeAt(last.length - 1) === 0x0a && add.charCodeAt(0) === 0x0a)
        ) {
          more.push(add);
          heldLength += add.length;
          if (heldLength > maxEventCharsNow()) throw eventTooLarge();
          return "";
        }
        if (more.length !== 0) {
          held += more.join("");
          more = [];
        }
      }
      const text = held === "" ? incoming.toString("latin1") : held + (add ?? incoming.toString("latin1"));
      let bytes: Buffer | null = held === "" ? incoming : null; // text's bytes, made once when needed
      if (text.indexOf("\r") !== -1) {
        textMode = true;
        held = "";
        heldLength = 0;
        return run(parser.push(Buffer.from(text, "latin1")));
      }
      // `out` is what goes out, up to `copied`; the text from `copied` to the current event is passed as it is.
      let out = "";
      let copied = 0;
      let start = 0;
      for (let end = text.indexOf("\n\n"); end !== -1; start = end + 2, end = text.indexOf("\n\n", start)) {
        if (tplSegs.length !== 0 && !error && text.startsWith("data: ", start)) {
          bytes ??= Buffer.from(text, "latin1");
          const n = matchTemplate(text, bytes, start + 6, end);
          if (n !== -1) {
            deliveredChars += n;
            if (tplEdited) {
              out += text.slice(copied, start + 6) + tplOut[0]!;
              for (let k = 1; k < tplOut.length; k++) out += text.slice(varFrom[k - 1]!, varTo[k - 1]!) + tplOut[k]!;
              copied = end;
            }
            continue;
          }
        }
        const simple = text.startsWith("data: ", start) && text.indexOf("\n", start) === end;
        const data = simple ? text.slice(start + 6, end) : "";
        if (data === "[DONE]") {
          // Held back: written by end() once the call is accounted.
          sawDone = true;
          out += text.slice(copied, start);
          copied = end + 2;
          continue;
        }
        const s = simple && !error ? scanChunk(data) : null;
        if (s === null) {
          out += text.slice(copied, start) + slow(text.slice(start, end));
          copied = end + 2;
          continue;
        }
        deliveredChars += s.chars;
        model = s.modelStart !== -1 && data.slice(s.modelStart, s.modelEnd) !== clientModelBytes;
        cut = !includeUsage && s.usageStart !== -1;
        if (s.strings !== 0) {
          // The variable strings in order, and the segments around them.
          const order = s.varOpen.map((_, k) => k).sort((x, y) => s.varOpen[x]! - s.varOpen[y]!);
          tplSegs = [];
          tplOut = [];
          tplCounted = [];
          tplEdited = model || cut;
          let at = 0;
          for (const k of order) {
            tplSegs.push(Buffer.from(data.slice(at, s.varOpen[k]! + 1), "latin1"));
            if (tplEdited) tplOut.push(edited(data, s, at, s.varOpen[k]! + 1));
            tplCounted.push(s.varCounted[k]!);
            at = s.varClose[k]!;
          }
          tplSegs.push(Buffer.from(data.slice(at), "latin1"));
          if (tplEdited) tplOut.push(edited(data, s, at, data.length));
        }
        if (!model && !cut) continue; // the event goes out as it came
        out += text.slice(copied, start + 6) + edited(data, s, 0, data.length);
        copied = end;
      }
      held = start === text.length ? "" : text.slice(start);
      heldLength = held.length;
      if (heldLength > maxEventCharsNow()) throw eventTooLarge();
      // Nothing changed: the upstream's own buffer goes out (the common case when the client names the model
      // the upstream answers with).
      if (copied === 0 && start === text.length && held === "" && text.length === incoming.length) return chunk;
      out += text.slice(copied, start);
      return out === "" ? "" : Buffer.from(out, "latin1");
    };
    const flush = (): string => {
      if (textMode) return run(parser.flush());
      const rest = held + more.join("");
      held = "";
      more = [];
      heldLength = 0;
      return rest.trim() ? fromBytes(slow(rest)) : "";
    };
    return {
      push,
      // [DONE] is the stream's last frame, written once the call is accounted.
      end: () => {
        const out = flush();
        return error || !(sawDone || sawUsage) ? out : out + "data: [DONE]\n\n";
      },
      get usage() {
        return usage;
      },
      get deliveredChars() {
        return deliveredChars;
      },
      get error() {
        return error;
      },
      errorFrame: (err) => `data: ${renderOpenAIError(err, requestId).body}\n\n`,
      get complete() {
        return !error && (sawDone || sawUsage);
      },
    };
  },
};
