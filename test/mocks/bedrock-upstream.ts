// A mock AWS Bedrock runtime that holds callers to what AWS holds them to:
//   - SigV4: the signature is recomputed with AWS's own signer from the request as received (its raw path, the
//     headers it lists as signed, the body) and a mismatch is refused with 403 InvalidSignatureException, as
//     AWS refuses it; an unknown key id or a missing session token is 403 UnrecognizedClientException;
//   - InvokeModel / InvokeModelWithResponseStream for Anthropic's models: the Messages body with
//     anthropic_version "bedrock-2023-05-31" and neither `model` nor `stream` (ValidationException otherwise);
//   - Converse / ConverseStream: Converse's request shape;
//   - streams in AWS's binary event stream (encoded with AWS's codec), each message's bytes split across two
//     writes so that a reader must join them; errors with x-amzn-ErrorType and a {"message"} body.
// It is proven against AWS's own client (@aws-sdk/client-bedrock-runtime) in bedrock-upstream.test.ts.

import { createHash } from "node:crypto";
import type { ServerResponse } from "node:http";
import { EventStreamCodec } from "@smithy/eventstream-codec";
import { Hash } from "@smithy/hash-node";
import { SignatureV4 } from "@smithy/signature-v4";
import type { MessageHeaders } from "@smithy/types";
import { fromUtf8, toUtf8 } from "@smithy/util-utf8";
import {
  type MockReply,
  type MockUpstream,
  type MockUpstreamOptions,
  type RecordedRequest,
  defaultUsage,
  finishOf,
  fragments,
  nextReply,
  sleep,
  startScriptedMock,
} from "./script.ts";
import { anthropicMessage, anthropicUsage, messageDelta, thinkingEvents, toolUseEvents } from "./anthropic-upstream.ts";

export interface BedrockCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export const DEFAULT_BEDROCK_CREDENTIALS: BedrockCredentials = {
  accessKeyId: "AKIAMOCKBEDROCK00001",
  secretAccessKey: "mock/Bedrock+secret/key0000000000000000",
};

export interface BedrockMockOptions extends MockUpstreamOptions {
  /** The region the mock serves (the signature's scope must name it); default us-east-1. */
  region?: string;
  /** The credentials it accepts; default DEFAULT_BEDROCK_CREDENTIALS. */
  credentials?: BedrockCredentials[];
  /** Model ids it serves (absent: any); another is 404 ResourceNotFoundException. */
  models?: string[];
  /**
   * InvokeModel: the requests whose answer also splits its cache writes by lifetime (usage.cache_creation, as
   * Anthropic's Messages API states it); for the others (default: all) only the total
   * cache_creation_input_tokens, as Bedrock's invocation metrics state it.
   */
  splitCacheWrites?: (req: RecordedRequest) => boolean;
}

export interface BedrockMock extends MockUpstream {
  /** Calls refused for their signature or credential. */
  refused: { url: string; reason: string }[];
}

const codec = new EventStreamCodec(toUtf8, fromUtf8);
const sha256 = Hash.bind(null, "sha256");

const ERROR_TYPE: Record<number, string> = {
  400: "ValidationException",
  403: "AccessDeniedException",
  404: "ResourceNotFoundException",
  408: "ModelTimeoutException",
  424: "ModelErrorException",
  429: "ThrottlingException",
  500: "InternalServerException",
  503: "ServiceUnavailableException",
};

let counter = 0;
const requestId = (): string => `mock-${(++counter).toString().padStart(8, "0")}-bedrock`;

function sendError(res: ServerResponse, status: number, type: string, message: string): void {
  res.writeHead(status, {
    "content-type": "application/json",
    "x-amzn-errortype": `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
    "x-amzn-requestid": requestId(),
  });
  res.end(JSON.stringify({ message }));
}

const AUTH =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/;

const header = (h: RecordedRequest["headers"], name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v.join(",") : v;
};

/** Why AWS would refuse this request's signature, or null when it holds. */
async function signatureFault(
  recorded: RecordedRequest,
  raw: string,
  region: string,
  credentials: BedrockCredentials[],
): Promise<{ type: string; message: string } | null> {
  const m = AUTH.exec(header(recorded.headers, "authorization") ?? "");
  if (!m) return { type: "MissingAuthenticationTokenException", message: "Missing Authentication Token" };
  const [, keyId, day, scopeRegion, service, signedList, signature] = m;
  const cred = credentials.find((c) => c.accessKeyId === keyId);
  if (!cred)
    return { type: "UnrecognizedClientException", message: "The security token included in the request is invalid." };
  if (cred.sessionToken !== undefined && header(recorded.headers, "x-amz-security-token") !== cred.sessionToken)
    return { type: "UnrecognizedClientException", message: "The security token included in the request is invalid." };
  if (scopeRegion !== region || service !== "bedrock")
    return {
      type: "InvalidSignatureException",
      message: `Credential should be scoped to a valid region and service: ${region}/bedrock, not ${scopeRegion}/${service}.`,
    };
  const amzDate = header(recorded.headers, "x-amz-date") ?? "";
  const when = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (!when || amzDate.slice(0, 8) !== day)
    return {
      type: "InvalidSignatureException",
      message: "Date must be in ISO-8601 'basic format' and match the scope.",
    };
  const signingDate = new Date(Date.UTC(+when[1]!, +when[2]! - 1, +when[3]!, +when[4]!, +when[5]!, +when[6]!));
  if (Math.abs(Date.now() - signingDate.getTime()) > 15 * 60_000)
    return { type: "InvalidSignatureException", message: "Signature expired." };
  const claimed = header(recorded.headers, "x-amz-content-sha256");
  if (claimed !== undefined && claimed !== createHash("sha256").update(raw).digest("hex"))
    return { type: "InvalidSignatureException", message: "The provided 'x-amz-content-sha256' header does not match." };
  const signed = signedList!.split(";");
  if (!signed.includes("host"))
    return { type: "InvalidSignatureException", message: "'Host' must be a signed header." };
  const headers: Record<string, string> = {};
  for (const name of signed) {
    const v = header(recorded.headers, name);
    if (v === undefined) return { type: "InvalidSignatureException", message: `Signed header ${name} is missing.` };
    headers[name] = v;
  }
  const url = new URL(recorded.url, "http://mock");
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = v;
  // The raw path as it came over the wire (new URL keeps its percent-escapes): the signer escapes it once
  // more, as AWS does for its canonical request.
  const path = recorded.url.split("?")[0]!;
  const signer = new SignatureV4({ service: "bedrock", region, credentials: cred, sha256, applyChecksum: false });
  const expected = await signer.sign(
    { method: recorded.method, protocol: "http:", hostname: headers.host!, path, query, headers, body: raw },
    { signingDate },
  );
  const ours = AUTH.exec(String(expected.headers.authorization ?? ""));
  if (!ours || ours[5] !== signedList || ours[6] !== signature)
    return {
      type: "InvalidSignatureException",
      message:
        "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.",
    };
  return null;
}

/** An event-stream message: an event (or exception) of `type` with a JSON payload. */
const streamMessage = (messageType: "event" | "exception", type: string, payload: unknown): Uint8Array =>
  codec.encode({
    headers: {
      [`:${messageType}-type`]: { type: "string", value: type },
      ":content-type": { type: "string", value: "application/json" },
      ":message-type": { type: "string", value: messageType },
    } satisfies MessageHeaders,
    body: fromUtf8(JSON.stringify(payload)),
  });

const eventMessage = (eventType: string, payload: unknown): Uint8Array => streamMessage("event", eventType, payload);

const exceptionMessage = (exceptionType: string, message: string): Uint8Array =>
  streamMessage("exception", exceptionType, { message });

/**
 * Writes messages so that none arrives whole: each write is the end of the last message and all but the last
 * bytes of the next.
 */
function splitWriter(res: ServerResponse, delayMs: number | undefined) {
  let carry: Buffer = Buffer.alloc(0);
  return {
    async write(message: Uint8Array): Promise<void> {
      const all = Buffer.concat([carry, message]);
      const cut = all.length - Math.min(5, message.length - 1);
      res.write(all.subarray(0, cut));
      carry = Buffer.from(all.subarray(cut));
      if (delayMs) await sleep(delayMs);
    },
    end(): void {
      res.end(carry);
    },
  };
}

const toolId = (i: number, id?: string): string => id ?? `tooluse_mock${i.toString().padStart(2, "0")}`;

/** Ends the stream with Bedrock's exception message where the reply breaks off (before text chunk `n`). */
async function brokeOff(out: ReturnType<typeof splitWriter>, r: MockReply, n: number): Promise<boolean> {
  if (!r.midStreamError || n !== (r.midStreamError.afterChunks ?? 1)) return false;
  await out.write(exceptionMessage(r.midStreamError.type ?? "modelStreamErrorException", r.midStreamError.message));
  out.end();
  return true;
}

// ---- Anthropic's models: InvokeModel ----

/** The Claude model name Bedrock's answers carry (not the Bedrock model id). */
const claudeName = (modelId: string): string =>
  /anthropic\.(claude-[a-z0-9-]+?)(?:-v\d+(?::\d+)?)?$/.exec(modelId)?.[1] ?? "claude-mock";

/** Claude's answer as InvokeModel gives it: Anthropic's Messages answer, with Bedrock's ids. */
const claudeMessage = (r: MockReply, modelId: string, split: boolean): Record<string, unknown> =>
  anthropicMessage(r, { id: "msg_bdrk_mock01", model: claudeName(modelId), toolId, splitCacheWrites: split });

/** What InvokeModel refuses in an Anthropic body (Bedrock's own wording where it has one). */
function invokeBodyFault(body: unknown): string | null {
  if (body === null || typeof body !== "object") return "Malformed input request: expected a JSON object.";
  const b = body as Record<string, unknown>;
  if (b.anthropic_version !== "bedrock-2023-05-31")
    return "Malformed input request: #: required key [anthropic_version] not found or not bedrock-2023-05-31.";
  for (const key of ["model", "stream"])
    if (key in b)
      return `Malformed input request: #: extraneous key [${key}] is not permitted, please reformat your input and try again.`;
  if (typeof b.max_tokens !== "number") return "Malformed input request: #: required key [max_tokens] not found.";
  if (!Array.isArray(b.messages) || b.messages.length === 0)
    return "Malformed input request: #: required key [messages] not found.";
  if (
    b.anthropic_beta !== undefined &&
    !(Array.isArray(b.anthropic_beta) && b.anthropic_beta.every((x) => typeof x === "string"))
  )
    return "Malformed input request: #/anthropic_beta: expected type: JSONArray of strings.";
  return null;
}

async function invokeStream(res: ServerResponse, r: MockReply, modelId: string, split: boolean): Promise<void> {
  res.writeHead(200, {
    "content-type": "application/vnd.amazon.eventstream",
    "x-amzn-bedrock-content-type": "application/json",
    "x-amzn-requestid": requestId(),
  });
  const out = splitWriter(res, r.delayMs);
  const send = (event: Record<string, unknown>) =>
    out.write(eventMessage("chunk", { bytes: Buffer.from(JSON.stringify(event)).toString("base64"), p: "abcdefgh" }));
  const usage = anthropicUsage(r, split);
  const msg = claudeMessage(r, modelId, split);
  await send({
    type: "message_start",
    message: { ...msg, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } },
  });
  let index = 0;
  if (r.thinking) {
    for (const e of thinkingEvents(r.thinking, r.signature, index, { type: "thinking", thinking: "" })) await send(e);
    index++;
  }
  if (r.text) {
    await send({ type: "content_block_start", index, content_block: { type: "text", text: "" } });
    for (const [n, t] of r.text.entries()) {
      if (await brokeOff(out, r, n)) return;
      await send({ type: "content_block_delta", index, delta: { type: "text_delta", text: t } });
    }
    await send({ type: "content_block_stop", index });
    index++;
  }
  for (const [i, c] of (r.toolCalls ?? []).entries()) {
    for (const e of toolUseEvents(c, toolId(i, c.id), index, [])) await send(e);
    index++;
  }
  await send(messageDelta(r, usage.output_tokens));
  await send({
    type: "message_stop",
    "amazon-bedrock-invocationMetrics": {
      inputTokenCount: usage.input_tokens,
      outputTokenCount: usage.output_tokens,
      invocationLatency: 42,
      firstByteLatency: 7,
      cacheReadInputTokenCount: usage.cache_read_input_tokens,
      cacheWriteInputTokenCount: usage.cache_creation_input_tokens,
    },
  });
  out.end();
}

// ---- Every model: Converse ----

const CONVERSE_STOP = {
  stop: "end_turn",
  length: "max_tokens",
  tool_calls: "tool_use",
  content_filter: "content_filtered",
} as const;

function converseUsage(r: MockReply): Record<string, unknown> {
  const u = defaultUsage(r);
  const cached = u.cachedTokens ?? 0;
  const w5m = u.cacheWrite5mTokens ?? 0;
  const w1h = u.cacheWrite1hTokens ?? 0;
  const input = u.promptTokens - cached - w5m - w1h;
  const output = u.completionTokens + (u.reasoningTokens ?? 0);
  const out: Record<string, unknown> = {
    inputTokens: input,
    outputTokens: output,
    totalTokens: u.promptTokens + output,
  };
  if (cached > 0) out.cacheReadInputTokens = cached;
  if (w5m + w1h > 0) {
    out.cacheWriteInputTokens = w5m + w1h;
    out.cacheDetails = [
      ...(w1h > 0 ? [{ ttl: "1h", inputTokens: w1h }] : []),
      ...(w5m > 0 ? [{ ttl: "5m", inputTokens: w5m }] : []),
    ];
  }
  return out;
}

const BLOCK_KEYS = new Set([
  "text",
  "image",
  "document",
  "video",
  "toolUse",
  "toolResult",
  "guardContent",
  "cachePoint",
  "reasoningContent",
  "citationsContent",
]);

/** What Converse refuses in a request body (its shape, not the model's judgement). */
function converseBodyFault(body: unknown): string | null {
  if (body === null || typeof body !== "object") return "Malformed request body.";
  const b = body as Record<string, unknown>;
  const known = [
    "messages",
    "system",
    "inferenceConfig",
    "toolConfig",
    "guardrailConfig",
    "additionalModelRequestFields",
    "promptVariables",
    "additionalModelResponseFieldPaths",
    "requestMetadata",
    "performanceConfig",
    "serviceTier",
    "outputConfig",
  ];
  for (const k of Object.keys(b)) if (!known.includes(k)) return `Unknown field in request: ${k}.`;
  if (!Array.isArray(b.messages))
    return "1 validation error detected: Value null at 'messages' failed to satisfy constraint: Member must not be null.";
  for (const [i, m] of (b.messages as Record<string, unknown>[]).entries()) {
    if (m.role !== "user" && m.role !== "assistant") return `messages.${i}.role must be user or assistant.`;
    if (!Array.isArray(m.content) || m.content.length === 0) return `messages.${i}.content must be a non-empty list.`;
    for (const block of m.content as Record<string, unknown>[]) {
      const keys = Object.keys(block);
      if (keys.length !== 1 || !BLOCK_KEYS.has(keys[0]!))
        return `messages.${i}.content: a content block has exactly one known member.`;
    }
  }
  if (
    b.system !== undefined &&
    !(Array.isArray(b.system) && b.system.every((s) => typeof (s as { text?: unknown }).text === "string"))
  )
    return "system must be a list of {text} blocks.";
  const inf = b.inferenceConfig as Record<string, unknown> | undefined;
  if (inf !== undefined) {
    for (const k of Object.keys(inf))
      if (!["maxTokens", "temperature", "topP", "stopSequences"].includes(k))
        return `Unknown field in inferenceConfig: ${k}.`;
  }
  const tc = b.toolConfig as
    { tools?: { toolSpec?: { name?: unknown; inputSchema?: { json?: unknown } } }[] } | undefined;
  if (tc !== undefined) {
    if (!Array.isArray(tc.tools) || tc.tools.length === 0) return "toolConfig.tools must be a non-empty list.";
    for (const t of tc.tools)
      if (typeof t.toolSpec?.name !== "string" || typeof t.toolSpec.inputSchema?.json !== "object")
        return "toolConfig.tools: each tool is a toolSpec with a name and inputSchema.json.";
  }
  return null;
}

function converseContent(r: MockReply): Record<string, unknown>[] {
  const content: Record<string, unknown>[] = [];
  if (r.thinking)
    content.push({
      reasoningContent: { reasoningText: { text: r.thinking.join(""), signature: r.signature ?? "mock-signature" } },
    });
  if (r.text) content.push({ text: r.text.join("") });
  (r.toolCalls ?? []).forEach((c, i) =>
    content.push({ toolUse: { toolUseId: toolId(i, c.id), name: c.name, input: c.arguments } }),
  );
  return content;
}

async function converseStream(res: ServerResponse, r: MockReply): Promise<void> {
  res.writeHead(200, { "content-type": "application/vnd.amazon.eventstream", "x-amzn-requestid": requestId() });
  const out = splitWriter(res, r.delayMs);
  const send = (type: string, payload: Record<string, unknown>) =>
    out.write(eventMessage(type, { ...payload, p: "abcd" }));
  await send("messageStart", { role: "assistant" });
  let index = 0;
  if (r.thinking) {
    for (const t of r.thinking)
      await send("contentBlockDelta", { contentBlockIndex: index, delta: { reasoningContent: { text: t } } });
    await send("contentBlockDelta", {
      contentBlockIndex: index,
      delta: { reasoningContent: { signature: r.signature ?? "mock-signature" } },
    });
    await send("contentBlockStop", { contentBlockIndex: index });
    index++;
  }
  if (r.text) {
    for (const [n, t] of r.text.entries()) {
      if (await brokeOff(out, r, n)) return;
      await send("contentBlockDelta", { contentBlockIndex: index, delta: { text: t } });
    }
    await send("contentBlockStop", { contentBlockIndex: index });
    index++;
  }
  for (const [i, c] of (r.toolCalls ?? []).entries()) {
    await send("contentBlockStart", {
      contentBlockIndex: index,
      start: { toolUse: { toolUseId: toolId(i, c.id), name: c.name } },
    });
    for (const f of fragments(JSON.stringify(c.arguments)))
      await send("contentBlockDelta", { contentBlockIndex: index, delta: { toolUse: { input: f } } });
    await send("contentBlockStop", { contentBlockIndex: index });
    index++;
  }
  await send("messageStop", { stopReason: CONVERSE_STOP[finishOf(r)] });
  await send("metadata", { usage: converseUsage(r), metrics: { latencyMs: 42 } });
  out.end();
}

const PATH = /^\/model\/([^/]+)\/(invoke|invoke-with-response-stream|converse|converse-stream)$/;

/** Starts the mock. Its `url` is the origin, as a bedrock upstream's baseUrl holds it. */
export async function startBedrockUpstream(opts: BedrockMockOptions = {}): Promise<BedrockMock> {
  const region = opts.region ?? "us-east-1";
  const credentials = opts.credentials ?? [DEFAULT_BEDROCK_CREDENTIALS];
  const refused: BedrockMock["refused"] = [];
  const mock = (await startScriptedMock(
    opts,
    "",
    async (mock, recorded, req, res): Promise<void> => {
      const fault = await signatureFault(recorded, recorded.raw ?? "", region, credentials);
      if (fault) {
        refused.push({ url: recorded.url, reason: fault.message });
        return sendError(res, 403, fault.type, fault.message);
      }
      const m = PATH.exec(recorded.url.split("?")[0]!);
      if (req.method !== "POST" || !m)
        return sendError(res, 404, "UnknownOperationException", `Unknown operation ${recorded.url}`);
      const modelId = decodeURIComponent(m[1]!);
      const op = m[2]!;
      if (opts.models && !opts.models.includes(modelId))
        return sendError(
          res,
          404,
          "ResourceNotFoundException",
          `Could not resolve the foundation model from the model identifier ${modelId}.`,
        );
      if (!String(req.headers["content-type"] ?? "").startsWith("application/json"))
        return sendError(res, 400, "ValidationException", "Content-Type must be application/json.");
      const invoke = op.startsWith("invoke");
      const bodyFault = invoke ? invokeBodyFault(recorded.body) : converseBodyFault(recorded.body);
      if (bodyFault) return sendError(res, 400, "ValidationException", bodyFault);
      const r = nextReply(mock, recorded);
      if (r.error)
        return sendError(
          res,
          r.error.status,
          r.error.type ?? ERROR_TYPE[r.error.status] ?? "InternalServerException",
          r.error.message,
        );
      const split = opts.splitCacheWrites?.(recorded) ?? false;
      if (op === "invoke-with-response-stream") return invokeStream(res, r, modelId, split);
      if (op === "converse-stream") return converseStream(res, r);
      res.writeHead(200, { "content-type": "application/json", "x-amzn-requestid": requestId() });
      if (op === "invoke") return void res.end(JSON.stringify(claudeMessage(r, modelId, split)));
      res.end(
        JSON.stringify({
          output: { message: { role: "assistant", content: converseContent(r) } },
          stopReason: CONVERSE_STOP[finishOf(r)],
          usage: converseUsage(r),
          metrics: { latencyMs: 42 },
        }),
      );
    },
    (res, err) => sendError(res, 500, "InternalServerException", String(err)),
  )) as BedrockMock;
  mock.refused = refused;
  return mock;
}
