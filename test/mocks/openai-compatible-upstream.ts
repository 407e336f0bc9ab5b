// OpenAI-compatible vendors' answers as their documentation shows them (DeepSeek's reasoning_content and
// cache hit/miss counts, Groq's x_groq.usage, Moonshot's top-level cached_tokens), served under a path prefix
// per vendor with a bearer key, for the presets' end-to-end tests.

import { type IncomingMessage, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface VendorFixture {
  reasoningField?: "reasoning_content" | "reasoning";
  reasoning: string;
  text: string;
  /** the vendor's usage object, as it sends it (or as it sends it for this request's body) */
  usage: Record<string, unknown> | ((body: Record<string, unknown>) => Record<string, unknown>);
  /**
   * where a stream's usage goes: a final chunk's `usage` when asked with stream_options, always (Mistral, which
   * refuses stream_options), or Groq's x_groq
   */
  streamUsage: "usage" | "always" | "x_groq";
}

export interface CompatibleRequest {
  vendor: string;
  path: string;
  authorization: string | undefined;
  body: Record<string, unknown>;
}

export interface CompatibleUpstream {
  url: string;
  requests: CompatibleRequest[];
  close(): Promise<void>;
}

export async function startCompatibleUpstream(
  key: string,
  fixtures: Record<string, VendorFixture>,
): Promise<CompatibleUpstream> {
  const requests: CompatibleRequest[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const m = /^\/([a-z]+)\/v1\/chat\/completions$/.exec(req.url ?? "");
      const fixture = m ? fixtures[m[1]!] : undefined;
      if (!m || !fixture) {
        res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"message":"no such path"}}');
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
      if (fixture.streamUsage === "always" && "stream_options" in body) {
        // Mistral's API refuses fields it does not know.
        res.writeHead(422, { "content-type": "application/json" }).end('{"message":"Extra inputs are not permitted"}');
        return;
      }
      requests.push({ vendor: m[1]!, path: req.url!, authorization: req.headers.authorization, body });
      if (req.headers.authorization !== `Bearer ${key}`) {
        res
          .writeHead(401, { "content-type": "application/json" })
          .end('{"error":{"message":"Authentication Fails","type":"authentication_error"}}');
        return;
      }
      const model = String(body.model);
      const usage = typeof fixture.usage === "function" ? fixture.usage(body) : fixture.usage;
      const base = { id: "cmpl-1", created: 1_705_651_092, model };
      const rf = fixture.reasoningField ?? "reasoning_content";
      if (body.stream !== true) {
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            ...base,
            object: "chat.completion",
            choices: [
              {
                index: 0,
                message: { role: "assistant", content: fixture.text, [rf]: fixture.reasoning },
                logprobs: null,
                finish_reason: "stop",
              },
            ],
            usage,
          }),
        );
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (extra: Record<string, unknown>) =>
        `data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", ...extra })}\n\n`;
      const delta = (d: Record<string, unknown>, finish: string | null = null) =>
        chunk({ choices: [{ index: 0, delta: d, logprobs: null, finish_reason: finish }] });
      let out = delta({ role: "assistant", content: "", [rf]: fixture.reasoning });
      out += delta({ content: fixture.text });
      if (fixture.streamUsage === "x_groq") {
        out += chunk({
          choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: "stop" }],
          x_groq: { id: "req_01", usage },
        });
      } else {
        out += delta({}, "stop");
        const asked = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
        if (asked || fixture.streamUsage === "always") out += chunk({ choices: [], usage });
      }
      res.end(out + "data: [DONE]\n\n");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
