// OpenAI client to OpenAI upstream, the common case: no translation. Each SSE event is parsed once to read
// usage; it goes out byte for byte unless the model name must be put back or the usage chunk the gateway
// asked for (stream_options.include_usage) must be hidden from a client that did not ask.

import { GatewayError } from "../../errors.ts";
import type { Usage } from "../canonical.ts";
import { parseUpstreamJson } from "../passthrough.ts";
import { SseParser } from "../sse.ts";
import { tokensFromChars } from "../../usage/record.ts";
import type { Passthrough, PassthroughStream } from "../types.ts";
import { renderOpenAIError } from "./errors.ts";
import { replaceModelField } from "./model-field.ts";

interface OpenAIUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
}

const usageOf = (u: OpenAIUsage): Usage => ({
  promptTokens: u.prompt_tokens ?? 0,
  completionTokens: u.completion_tokens ?? 0,
  cachedTokens: u.prompt_tokens_details?.cached_tokens ?? 0,
  reasoningTokens: u.completion_tokens_details?.reasoning_tokens ?? 0,
});

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

export const openAIPassthrough: Passthrough = {
  path: () => "/chat/completions",
  body(raw, body, req, upstreamModel) {
    // The client's bytes as they are when nothing needs changing: the common case pays no re-serialisation.
    if (upstreamModel === req.model && (!req.stream || req.streamIncludeUsage === true)) return raw;
    const b: Record<string, unknown> = { ...body, model: upstreamModel };
    // Always ask for usage: it is what the call is billed by. The relay hides it from clients that did not ask.
    if (req.stream) b.stream_options = { ...(body.stream_options as object | undefined), include_usage: true };
    return JSON.stringify(b);
  },
  readJson(text, clientModel, estimatedPromptTokens) {
    const parsed = parseUpstreamJson(text) as {
      model?: string;
      usage?: OpenAIUsage | null;
      choices?: { message?: { content?: unknown; reasoning_content?: unknown } }[];
    };
    if (parsed.usage && typeof parsed.usage.prompt_tokens === "number") {
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
      if (chunk.usage) {
        sawUsage = true;
        usage = usageOf(chunk.usage);
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
    return {
      push: (chunk) => run(parser.push(chunk)),
      // [DONE] is the stream's last frame, written once the call is accounted.
      end: () => {
        const out = run(parser.flush());
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
