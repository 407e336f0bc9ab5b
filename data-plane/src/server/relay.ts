import type { ServerResponse } from "node:http";
import { GatewayError } from "../errors.ts";
import type {
  CanonicalStreamEvent,
  Passthrough,
  PassthroughStream,
  UpstreamAdapter,
  StreamDecoder,
  StreamEncoder,
} from "../protocols/index.ts";
import type { Answer } from "../upstreams/upstream-call.ts";
import type { Call } from "./call.ts";
import { usableUsage } from "../protocols/shared.ts";
import { sendJson, withRequestId } from "./respond.ts";
import { tokensFromChars } from "../usage/record.ts";

// Relaying an upstream answer to the client, for the two cases:
// - passthrough: client and upstream speak the same protocol, so the upstream's bytes go out (the client
//   protocol's adapter puts the model name back and reads usage on the way);
// - translate: the upstream's answer is decoded into canonical events and encoded in the client's protocol.

export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
} as const;

/** A stream's head goes out with its first chunk, in one write; an upstream slower than this to send one gets it alone. */
const HEAD_ALONE_AFTER_MS = 20;

/** An event stream's writes, one upstream chunk at a time. */
export interface EventStream {
  /** Runs `relay(chunk)`, whose writes (and, the first time, the head) leave in one write. */
  chunk<T>(relay: (chunk: T) => void, chunk: T): void;
  /** The relay is over: the head no longer waits for a chunk. */
  end(): void;
}

/**
 * Starts an event stream. The head waits to travel with the first chunk, so the client's first byte costs
 * one packet, not two; an upstream slower than HEAD_ALONE_AFTER_MS to send one gets it alone.
 *
 * The writes stay corked until the current run of microtasks is over (process.nextTick), not just for one
 * chunk: the upstream's socket read hands over every chunk it held at once, and the relay's loop takes them
 * all before it waits again, so they leave in one writev. Uncorked per chunk, a stream under load made one
 * syscall per upstream chunk: half the data plane's busy time with 32 streams at once (a CPU profile of the
 * bench's streams scenario), and the newest streams' first bytes waited behind those writes.
 */
export function startEventStream(res: ServerResponse, headers: Record<string, string>): EventStream {
  res.writeHead(200, withRequestId(res, headers));
  const t = setTimeout(() => {
    if (!res.destroyed) res.flushHeaders();
  }, HEAD_ALONE_AFTER_MS);
  let corked = false;
  const uncork = () => {
    corked = false;
    res.uncork();
  };
  return {
    chunk(relay, chunk) {
      if (!corked) {
        clearTimeout(t);
        corked = true;
        res.cork();
        process.nextTick(uncork);
      }
      relay(chunk);
    },
    end: () => clearTimeout(t),
  };
}

const streamBroke = () =>
  new GatewayError("upstream", "upstream_stream_error", "The upstream stream failed before it finished.");

/** A broken stream, or the gateway's own verdict on the answer (over its size or time limits), as it is. */
const upstreamFailure = (err: unknown): GatewayError => (err instanceof GatewayError ? err : streamBroke());

/**
 * Between the steps of a large non-streamed answer (decoded, parsed, rendered, serialised), the event loop gets
 * a turn: each step of a 16 MiB answer (MODELGATE_UPSTREAM_MAX_ANSWER_BYTES) holds it 10–45 ms, all of them in
 * one turn about twice the 50 ms the gateway allows any single request.
 */
const LARGE_ANSWER_CHARS = 1024 * 1024;
const turnIfLarge = (chars: number): Promise<void> | undefined =>
  chars > LARGE_ANSWER_CHARS ? new Promise((resolve) => setImmediate(resolve)) : undefined;

async function readAll(answer: Answer, call: Call): Promise<string> {
  try {
    const text = await answer.upstream.text();
    call.firstByte();
    return text;
  } catch (err) {
    answer.settle(false);
    throw upstreamFailure(err);
  }
}

/**
 * Accounts a non-streamed answer read to its end; the charge is durable before the answer goes out. When the
 * client left meanwhile (Call.leave) it is the same charge with status 499, and nothing is sent: returns false.
 */
async function finishJson(call: Call, res: ServerResponse): Promise<boolean> {
  const gone = call.clientGone || res.destroyed;
  await call.finish(gone ? 499 : 200, gone ? "client_closed" : null);
  return !gone;
}

/** Non-streaming, translated: read the body, take usage from it, render it in the client's protocol. */
export async function relayJson(
  call: Call,
  res: ServerResponse,
  answer: Answer,
  upstreamAdapter: UpstreamAdapter,
  render: (canonical: ReturnType<UpstreamAdapter["parseUpstreamResponse"]>) => Record<string, unknown>,
  /** keeps the rendered answer (stateful protocols) before it goes out */
  commit: ((rendered: Record<string, unknown>) => Promise<void>) | undefined,
  headers: Record<string, string>,
): Promise<void> {
  const text = await readAll(answer, call);
  await turnIfLarge(text.length);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    answer.settle(false);
    throw new GatewayError("upstream", "upstream_bad_response", "The upstream answered with invalid JSON.");
  }
  answer.settle(true);
  const canonical = upstreamAdapter.parseUpstreamResponse(parsed);
  const u = canonical.usage;
  if (!usableUsage(u) || (u.promptTokens === 0 && u.completionTokens === 0)) {
    // No usage in the answer, or one the gateway cannot read (10.5 tokens, -3, "12"): never billed 0 (or a
    // credit) by omission. The gateway counts it (flagged estimated) and the client gets that count.
    for (const p of canonical.content)
      call.deliveredChars += p.type === "tool_call" ? p.arguments.length : p.text.length;
    canonical.usage = {
      ...u,
      promptTokens: call.admission.estimatedPromptTokens,
      completionTokens: tokensFromChars(call.deliveredChars),
    };
    call.setUsage(canonical.usage);
  } else {
    call.setUsage(u);
    call.usageComplete = true;
  }
  await turnIfLarge(text.length);
  const rendered = render(canonical);
  await commit?.(rendered);
  await turnIfLarge(text.length);
  if (await finishJson(call, res)) sendJson(res, 200, JSON.stringify(rendered), headers);
}

/** Non-streaming, same protocol: the upstream's bytes, read for usage, with the client's model name. */
export async function relayPassthroughJson(
  call: Call,
  res: ServerResponse,
  answer: Answer,
  pt: Passthrough,
  clientModel: string,
  headers: Record<string, string>,
  /** remembers the provider-side ids the answer hands out, before the client can name them */
  keepIds?: (ids: string[]) => Promise<void>,
): Promise<void> {
  const text = await readAll(answer, call);
  await turnIfLarge(text.length);
  let read: ReturnType<Passthrough["readJson"]>;
  try {
    read = pt.readJson(text, clientModel, call.admission.estimatedPromptTokens);
  } catch (err) {
    answer.settle(false);
    throw err;
  }
  answer.settle(true);
  call.deliveredChars += read.deliveredChars;
  call.setUsage(read.usage);
  call.usageComplete = read.exact;
  if (keepIds && read.providerIds?.length) await keepIds(read.providerIds);
  if (await finishJson(call, res)) sendJson(res, 200, read.body, headers);
}

export interface StreamRelay {
  decoder: StreamDecoder;
  encoder: StreamEncoder;
  contentType?: string | undefined;
}

/**
 * Translated streams, chunk by chunk as bytes arrive (no buffering beyond one incomplete event). A break
 * before the end ends the client's stream with its protocol's error event; the call is charged for what was
 * delivered.
 */
export async function relayStream(
  call: Call,
  res: ServerResponse,
  answer: Answer,
  relay: StreamRelay,
  headers: Record<string, string>,
): Promise<void> {
  const stream = startEventStream(res, {
    ...SSE_HEADERS,
    ...(relay.contentType ? { "content-type": relay.contentType } : {}),
    ...headers,
  });
  call.streaming = true;
  const out = (s: string) => {
    if (s && !res.destroyed) res.write(s);
  };
  let status = 200;
  let errorCode: string | null = null;
  const handle = (events: CanonicalStreamEvent[]) => {
    for (const ev of events) {
      call.observe(ev);
      if (ev.type === "error") {
        status = 502;
        errorCode = ev.error.code;
      }
      // A usage report the gateway cannot read is billed by estimate (Call.setUsage), and not passed on.
      if (ev.type === "usage" && !usableUsage(ev.usage)) continue;
      if (ev.type === "start" && ev.usage && !usableUsage(ev.usage)) {
        out(relay.encoder.encode({ type: "start", id: ev.id, model: ev.model, created: ev.created }));
        continue;
      }
      out(relay.encoder.encode(ev));
    }
  };
  const relayChunk = (chunk: Buffer) => handle(relay.decoder.push(chunk));
  try {
    for await (const chunk of answer.upstream.body) {
      call.firstByte();
      stream.chunk(relayChunk, chunk);
    }
    handle(relay.decoder.end());
    answer.settle(status === 200);
    call.usageComplete = status === 200 && call.usage !== null;
  } catch (err) {
    if (res.destroyed) {
      status = 499;
      errorCode = "client_closed";
      answer.settle(true);
    } else {
      answer.settle(false);
      const failure = upstreamFailure(err);
      status = 502;
      errorCode = failure.code;
      handle([{ type: "error", error: failure }]);
    }
  }
  // The client left before the stream began (Call.leave): read to its end all the same, and it is a 499.
  if (status === 200 && call.clientGone) {
    status = 499;
    errorCode = "client_closed";
  }
  stream.end();
  // Frames the encoder holds back until the answer is kept (the Responses API's response.completed).
  const tail = relay.encoder.close ? await relay.encoder.close() : "";
  await call.finish(status, errorCode); // the charge is durable before the stream's last byte
  if (!res.destroyed) res.end(tail || undefined);
}

/** Same-protocol streams: the adapter's reader passes the upstream's events on and reads usage from them. */
export async function relayPassthroughStream(
  call: Call,
  res: ServerResponse,
  answer: Answer,
  reader: PassthroughStream,
  headers: Record<string, string>,
  contentType?: string,
): Promise<void> {
  const stream = startEventStream(res, {
    ...SSE_HEADERS,
    ...(contentType ? { "content-type": contentType } : {}),
    ...headers,
  });
  call.streaming = true;
  // After the client left, the upstream is still read for its usage (Call.cut); nothing is written.
  const out = (s: string | Uint8Array) => {
    if (s.length !== 0 && !res.destroyed) res.write(s);
  };
  // What the reader has counted so far is the call's, so a client leaving midway is charged for it.
  const relayChunk = (chunk: Buffer) => {
    out(reader.push(chunk));
    call.deliveredChars = reader.deliveredChars;
    if (reader.usage) call.setUsage(reader.usage);
  };
  let status = 200;
  let errorCode: string | null = null;
  // The stream's last frame ([DONE] for OpenAI) goes out once the call is accounted.
  let tail = "";
  try {
    for await (const chunk of answer.upstream.body) {
      call.firstByte();
      stream.chunk(relayChunk, chunk);
    }
    tail = reader.end();
    if (reader.error) {
      status = 502;
      errorCode = "upstream_stream_error";
      answer.settle(false);
    } else {
      if (!reader.complete) throw new Error("upstream stream ended early");
      answer.settle(true);
      call.usageComplete = reader.usage !== null;
    }
  } catch (err) {
    if (res.destroyed) {
      status = 499;
      errorCode = "client_closed";
      answer.settle(true);
    } else {
      answer.settle(false);
      const failure = upstreamFailure(err);
      status = 502;
      errorCode = failure.code;
      out(tail);
      tail = "";
      out(reader.errorFrame(failure));
    }
  }
  if (status === 200 && call.clientGone) {
    status = 499;
    errorCode = "client_closed";
  }
  call.deliveredChars = reader.deliveredChars;
  if (reader.usage) call.setUsage(reader.usage);
  stream.end();
  await call.finish(status, errorCode); // the charge is durable before the stream's last byte
  if (!res.destroyed) res.end(tail || undefined);
}
