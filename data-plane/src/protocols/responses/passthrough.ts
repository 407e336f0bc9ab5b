// A Responses client and an `openai-responses` upstream: the client's bytes go up (with the upstream's model
// name when the route renames it) and the upstream's events come back as they are, read once each for usage;
// only the model name is put back and an upstream `error` event is re-shaped to carry the request id.
// previous_response_id, store, reasoning items and encrypted_content reach the provider untouched.

import { GatewayError } from "../../errors.ts";
import type { Usage } from "../canonical.ts";
import { parseUpstreamJson, readHead } from "../passthrough.ts";
import { forwardsOpenAIHeader } from "../openai/passthrough.ts";
import { replaceModelField } from "../openai/model-field.ts";
import { type Json, obj, str, usableUsage } from "../shared.ts";
import { SseParser } from "../sse.ts";
import type { Passthrough, PassthroughStream } from "../types.ts";
import { tokensFromChars } from "../../usage/record.ts";
import { responsesErrorFrame } from "./errors.ts";
import { namedProviderIds, providerIdsOfEvent, providerIdsOfResponse } from "./provider-ids.ts";
import { usageOfResponses } from "./response.ts";

const withModel = (text: string, parsed: Json, clientModel: string): string => {
  const model = str(parsed.model);
  if (model === undefined || model === clientModel) return text;
  return replaceModelField(text, model, clientModel) ?? JSON.stringify({ ...parsed, model: clientModel });
};

/** An event that carries the Response, with the client's model name in it (the few such events are re-serialised). */
const renamed = (text: string, data: Json, clientModel: string): string => {
  const r = obj(data.response);
  return str(r.model) === undefined || r.model === clientModel
    ? text
    : JSON.stringify({ ...data, response: { ...r, model: clientModel } });
};

export const responsesPassthrough: Passthrough = {
  head: readHead,
  forwardsHeader: forwardsOpenAIHeader,
  path: () => "/responses",
  namedIds: namedProviderIds,
  body: (raw, body, req, upstreamModel) =>
    upstreamModel === req.model ? raw : JSON.stringify({ ...body, model: upstreamModel }),
  readJson(text, clientModel, estimatedPromptTokens) {
    const parsed = obj(parseUpstreamJson(text));
    const reported = usageOfResponses(parsed.usage);
    if (parsed.usage != null && usableUsage(reported))
      return {
        body: withModel(text, parsed, clientModel),
        usage: reported,
        exact: true,
        deliveredChars: 0,
        providerIds: providerIdsOfResponse(parsed),
      };
    // No usage, or one the gateway cannot read: counted by the gateway (flagged estimated); the bytes go out as
    // they came.
    let chars = 0;
    for (const item of Array.isArray(parsed.output) ? parsed.output : []) chars += JSON.stringify(item).length;
    const usage = {
      promptTokens: estimatedPromptTokens,
      completionTokens: tokensFromChars(chars),
      reasoningTokens: 0,
      cachedTokens: 0,
    };
    return {
      body: withModel(text, parsed, clientModel),
      usage,
      exact: false,
      deliveredChars: chars,
      providerIds: providerIdsOfResponse(parsed),
    };
  },
  createStream(clientModel, requestId): PassthroughStream {
    const parser = new SseParser();
    let usage: Usage | null = null;
    let deliveredChars = 0;
    let error: GatewayError | null = null;
    let complete = false;
    // The upstream numbers its events; an error the gateway writes into the stream takes the next number, so
    // a client that checks the order (the openai SDK's stream helpers) sees one unbroken sequence.
    let nextSequence = 0;
    // The ids the provider hands out, in the order the stream shows them (each once).
    const providerIds: string[] = [];
    const seen = new Set<string>();
    const relay = (ev: { event: string | null; data: string }): string => {
      if (error || complete) return "";
      let data: Json;
      try {
        data = obj(JSON.parse(ev.data));
      } catch {
        return "";
      }
      const type = str(data.type) ?? ev.event ?? "message";
      const seq = data.sequence_number;
      const own = typeof seq === "number" && Number.isInteger(seq) ? seq : null;
      if (own !== null) nextSequence = Math.max(nextSequence, own + 1);
      for (const id of providerIdsOfEvent(type, data)) {
        if (seen.has(id)) continue;
        seen.add(id);
        providerIds.push(id);
      }
      const frame = (d: string) => `event: ${type}\ndata: ${d}\n\n`;
      switch (type) {
        case "error": {
          const e = data.error !== undefined ? obj(data.error) : data;
          error = new GatewayError(
            "upstream",
            "upstream_stream_error",
            `The upstream failed mid-stream: ${str(e.message) ?? "unknown error"}`,
          );
          return responsesErrorFrame(error, requestId, own ?? nextSequence++);
        }
        case "response.output_text.delta":
        case "response.refusal.delta":
        case "response.reasoning_summary_text.delta":
        case "response.reasoning_text.delta":
        case "response.function_call_arguments.delta":
          deliveredChars += (str(data.delta) ?? "").length;
          return frame(ev.data);
        case "response.completed":
        case "response.incomplete":
        case "response.failed": {
          const r = obj(data.response);
          if (r.usage != null) usage = usageOfResponses(r.usage);
          if (type === "response.failed") {
            error = new GatewayError(
              "upstream",
              "upstream_stream_error",
              str(obj(r.error).message) ?? "The upstream failed to answer.",
            );
          } else complete = true;
          return frame(renamed(ev.data, data, clientModel));
        }
        case "response.created":
        case "response.in_progress":
          return frame(renamed(ev.data, data, clientModel));
        default:
          return frame(ev.data);
      }
    };
    const run = (events: { event: string | null; data: string }[]): string => {
      let out = "";
      for (const ev of events) out += relay(ev);
      return out;
    };
    return {
      push: (chunk) => run(parser.push(chunk)),
      end: () => run(parser.flush()),
      get usage() {
        return usage;
      },
      get deliveredChars() {
        return deliveredChars;
      },
      get error() {
        return error;
      },
      get complete() {
        return complete;
      },
      errorFrame: (err) => responsesErrorFrame(err, requestId, nextSequence++),
      providerIds,
    };
  },
};
