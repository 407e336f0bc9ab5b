import type { UpstreamRequest, UpstreamResponse, UpstreamTransport } from "./transport.ts";
import { tokensFromChars } from "../usage/record.ts";

// The built-in `demo` upstream: answers in OpenAI's wire format without any network, so a fresh install's
// first call works offline. It echoes a short, deterministic reply and reports usage like a real provider.

const countTokens = (text: string): number => Math.max(1, tokensFromChars(text.length));

export class DemoTransport implements UpstreamTransport {
  // Like a real provider, a body it cannot read is the request's 400, never an exception: an exception here
  // would count against the upstream (its circuit breaker) for what is the caller's fault.
  async send(req: UpstreamRequest): Promise<UpstreamResponse> {
    try {
      return this.answer(req);
    } catch (err) {
      const text = JSON.stringify({
        error: {
          message: `The demo upstream cannot read this request: ${(err as Error).message}`,
          type: "invalid_request_error",
          param: null,
          code: null,
        },
      });
      return {
        status: 400,
        headers: { "content-type": "application/json" },
        body: (async function* () {
          yield Buffer.from(text);
        })(),
        text: async () => text,
      };
    }
  }

  private answer(req: UpstreamRequest): UpstreamResponse {
    const body = JSON.parse(String(req.body)) as {
      model: string;
      messages: { role: string; content: unknown }[];
      stream?: boolean;
      max_tokens?: number;
      max_completion_tokens?: number;
    };
    const lastUser = [...body.messages].reverse().find((m) => m.role === "user");
    const asked = typeof lastUser?.content === "string" ? lastUser.content : JSON.stringify(lastUser?.content ?? "");
    const words = `Hello from the modelgate demo upstream. You said: ${asked.slice(0, 200)}`.split(" ");
    const limit = body.max_completion_tokens ?? body.max_tokens;
    const reply = limit !== undefined ? words.slice(0, Math.max(1, limit)) : words;
    const truncated = reply.length < words.length;
    const promptTokens = body.messages.reduce(
      (n, m) => n + countTokens(typeof m.content === "string" ? m.content : JSON.stringify(m.content)),
      0,
    );
    const completionTokens = reply.length;
    const usage = {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    };
    const id = `chatcmpl-demo${Date.now().toString(36)}`;
    const created = Math.floor(Date.now() / 1000);
    const finish = truncated ? "length" : "stop";
    let chunks: string[];
    if (body.stream) {
      const chunk = (delta: object, finish_reason: string | null) =>
        `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: body.model, choices: [{ index: 0, delta, finish_reason }], usage: null })}\n\n`;
      chunks = [chunk({ role: "assistant", content: "" }, null)];
      reply.forEach((w, i) => chunks.push(chunk({ content: i === 0 ? w : ` ${w}` }, null)));
      chunks.push(chunk({}, finish));
      chunks.push(
        `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: body.model, choices: [], usage })}\n\n`,
      );
      chunks.push("data: [DONE]\n\n");
    } else {
      chunks = [
        JSON.stringify({
          id,
          object: "chat.completion",
          created,
          model: body.model,
          choices: [
            {
              index: 0,
              message: { role: "assistant", content: reply.join(" ") },
              finish_reason: finish,
              logprobs: null,
            },
          ],
          usage,
        }),
      ];
    }
    const buffers = chunks.map((c) => Buffer.from(c));
    return {
      status: 200,
      headers: { "content-type": body.stream ? "text/event-stream" : "application/json" },
      body: (async function* () {
        for (const b of buffers) yield b;
      })(),
      text: async () => chunks.join(""),
    };
  }
  async close(): Promise<void> {}
}
