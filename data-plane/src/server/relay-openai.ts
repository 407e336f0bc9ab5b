import type { ServerResponse } from "node:http";
import { GatewayError } from "../errors.ts";
import { renderOpenAIError } from "../protocols/openai/errors.ts";
import { replaceModelField } from "../protocols/openai/model-field.ts";
import { SseParser } from "../protocols/sse.ts";
import type { Call } from "./call.ts";
import { SSE_HEADERS, startEventStream } from "./relay.ts";
import type { Answer } from "../upstreams/upstream-call.ts";
import { tokensFromChars } from "../usage/record.ts";

// OpenAI client to OpenAI upstream, the common case: no translation. Each SSE event is parsed once to read
// usage; it goes out byte for byte unless the model name must be put back or the usage chunk the gateway
// asked for (stream_options.include_usage) must be hidden from a client that did not ask.

interface OpenAIUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
}

const usageOf = (u: OpenAIUsage) => ({
  promptTokens: u.prompt_tokens ?? 0,
  completionTokens: u.completion_tokens ?? 0,
  cachedTokens: u.prompt_tokens_details?.cached_tokens ?? 0,
  reasoningTokens: u.completion_tokens_details?.reasoning_tokens ?? 0,
});
// OpenAI's prompt_tokens already includes cached_tokens (reads); it reports no cache writes.

interface Chunk {
  model?: string;
  usage?: OpenAIUsage | null;
  choices?: { delta?: { content?: string | null; reasoning_content?: string | null; tool_calls?: { function?: { arguments?: string } }[] } }[];
}

export async function relayOpenAIJson(call: Call, res: ServerResponse, answer: Answer, clientModel: string, headers: Record<string, string>): Promise<void> {
  let text: string;
  try {
    text = await answer.upstream.text();
  } catch {
    answer.settle(false);
    throw new GatewayError("upstream", "upstream_stream_error", "The upstream failed while answering.");
  }
  call.firstByte();
  let parsed: { model?: string; usage?: OpenAIUsage | null; choices?: { message?: { content?: unknown; reasoning_content?: unknown } }[] };
  try {
    parsed = JSON.parse(text);
  } catch {
    answer.settle(false);
    throw new GatewayError("upstream", "upstream_bad_response", "The upstream answered with invalid JSON.");
  }
  answer.settle(true);
  let usageAdded = false;
  if (parsed.usage && typeof parsed.usage.prompt_tokens === "number") {
    call.setUsage(usageOf(parsed.usage));
    call.usageComplete = true;
  } else {
    usageAdded = true;
    // Every successful response carries usage; when the upstream leaves it out the gateway counts it (the
    // prompt from the request's size, the output from the answer) and the row is flagged estimated.
    for (const c of parsed.choices ?? []) call.deliveredChars += String(c.message?.content ?? "").length + String(c.message?.reasoning_content ?? "").length;
    const completion = tokensFromChars(call.deliveredChars);
    const prompt = call.admission.estimatedPromptTokens;
    call.setUsage({ promptTokens: prompt, completionTokens: completion, reasoningTokens: 0, cachedTokens: 0 });
    parsed.usage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } as OpenAIUsage;
  }
  // The upstream's bytes as they are, unless usage was added; the model name is put back in place.
  let body = text;
  if (usageAdded || parsed.model !== clientModel) {
    const swapped = !usageAdded && typeof parsed.model === "string" ? replaceModelField(text, parsed.model, clientModel) : null;
    body = swapped ?? JSON.stringify({ ...parsed, model: clientModel });
  }
  await call.finish(200); // the charge is durable before the answer goes out
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}

export async function relayOpenAIStream(
  call: Call,
  res: ServerResponse,
  answer: Answer,
  clientModel: string,
  includeUsage: boolean,
  headers: Record<string, string>,
): Promise<void> {
  const stream = startEventStream(res, { ...SSE_HEADERS, ...headers });
  call.streaming = true;
  // After the client left, the upstream is still read for its usage (Call.cut); nothing is written.
  const write = (s: string) => {
    if (!res.destroyed) res.write(s);
  };
  const parser = new SseParser();
  let sawDone = false;
  let sawUsage = false;
  let upstreamError: GatewayError | null = null;
  const relayEvent = (data: string) => {
    if (data === "[DONE]") {
      sawDone = true;
      return;
    }
    if (upstreamError) return; // nothing after an error, as the translating encoders do
    let chunk: Chunk & { error?: { message?: unknown; code?: unknown } };
    try {
      chunk = JSON.parse(data);
    } catch {
      return; // not JSON: nothing a client could use
    }
    if (chunk.error) {
      // Re-shaped so that this error, too, carries the request id.
      const message = typeof chunk.error.message === "string" ? chunk.error.message : "The upstream reported an error mid-stream.";
      upstreamError = new GatewayError("upstream", "upstream_stream_error", `The upstream failed mid-stream: ${message}`);
      write(`data: ${renderOpenAIError(upstreamError, call.record.requestId).body}\n\n`);
      return;
    }
    if (chunk.usage) {
      sawUsage = true;
      call.setUsage(usageOf(chunk.usage));
    }
    const choices = chunk.choices ?? [];
    for (const c of choices) {
      const d = c.delta;
      if (!d) continue;
      call.deliveredChars += (d.content?.length ?? 0) + (d.reasoning_content?.length ?? 0);
      for (const t of d.tool_calls ?? []) call.deliveredChars += t.function?.arguments?.length ?? 0;
    }
    if (!includeUsage && "usage" in chunk) {
      // The usage the gateway asked for, hidden from a client that did not ask.
      if (choices.length === 0 && chunk.usage) return;
      delete chunk.usage;
      if (chunk.model !== undefined) chunk.model = clientModel;
      write(`data: ${JSON.stringify(chunk)}\n\n`);
      return;
    }
    let out = data;
    if (typeof chunk.model === "string" && chunk.model !== clientModel) {
      out = replaceModelField(data, chunk.model, clientModel) ?? JSON.stringify({ ...chunk, model: clientModel });
    }
    write(`data: ${out}\n\n`);
  };
  const relayChunk = (buf: Buffer) => {
    for (const ev of parser.push(buf)) relayEvent(ev.data);
  };
  let status = 200;
  let errorCode: string | null = null;
  try {
    for await (const buf of answer.upstream.body) {
      call.firstByte();
      stream.chunk(relayChunk, buf);
    }
    for (const ev of parser.flush()) relayEvent(ev.data);
    if (upstreamError) {
      status = 502;
      errorCode = "upstream_stream_error";
      answer.settle(false);
    } else {
      if (!sawDone && !sawUsage) throw new Error("upstream stream ended early");
      answer.settle(true);
      call.usageComplete = sawUsage;
    }
  } catch {
    if (res.destroyed) {
      status = 499;
      errorCode = "client_closed";
      answer.settle(true);
    } else {
      answer.settle(false);
      status = 502;
      errorCode = "upstream_stream_error";
      const err = new GatewayError("upstream", "upstream_stream_error", "The upstream stream failed before it finished.");
      res.write(`data: ${renderOpenAIError(err, call.record.requestId).body}\n\n`);
    }
  }
  stream.end();
  await call.finish(status, errorCode); // the charge is durable before the stream's last byte
  if (!res.destroyed) res.end(status === 200 ? "data: [DONE]\n\n" : undefined);
}
