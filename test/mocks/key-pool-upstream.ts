import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

// An OpenAI chat-completions upstream whose answer depends on the key it is called with: each key can be told
// to answer 401, 403, 402, OpenAI's insufficient_quota 429, a 429 with retry-after, a 5xx, or to succeed
// (optionally with rate-limit headers). Records which key each request carried and when.

export type KeyBehaviour =
  | { kind: "ok"; headers?: Record<string, string> }
  | { kind: "status"; status: 401 | 403 | 402 | 500 | 503 }
  | { kind: "insufficient_quota" }
  | { kind: "rate_limited"; retryAfterS: number }
  /** 401 to the first `times` requests, then ok (a key one replica sees refused, to time another's reaction) */
  | { kind: "refuse_then_ok"; times: number }
  /** 401 unless the last message starts with `prefix` (one replica's calls refused, another's served) */
  | { kind: "refuse_unless"; prefix: string };

export interface KeyPoolMock {
  url: string;
  behaviour: Map<string, KeyBehaviour>;
  /** every request: the key it carried (the bearer), when it arrived, what it was answered, its last message */
  requests: { key: string; at: number; status: number; text: string }[];
  served(key: string): number;
  close(): Promise<void>;
}

export async function startKeyPoolMock(): Promise<KeyPoolMock> {
  const behaviour = new Map<string, KeyBehaviour>();
  const requests: KeyPoolMock["requests"] = [];
  const refused = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const at = Date.now();
      let text = "";
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { messages?: { content?: unknown }[] };
        const last = body.messages?.at(-1)?.content;
        text = typeof last === "string" ? last : "";
      } catch {
        /* not JSON */
      }
      const key = (req.headers.authorization ?? "").replace(/^Bearer /, "");
      const b = behaviour.get(key) ?? { kind: "ok" };
      const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        requests.push({ key, at, status, text });
        res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
      };
      const error = (message: string, type: string, code: string | null) => ({
        error: { message, type, param: null, code },
      });
      const ok = (headers: Record<string, string> = {}) =>
        send(
          200,
          {
            id: "chatcmpl-pool",
            object: "chat.completion",
            created: 1,
            model: "gpt-4o-mini",
            choices: [{ index: 0, message: { role: "assistant", content: `served by ${key}` }, finish_reason: "stop" }],
            usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
          },
          headers,
        );
      switch (b.kind) {
        case "ok":
          return ok(b.headers);
        case "status":
          return send(
            b.status,
            error(
              b.status === 401 ? "Incorrect API key provided." : `failed ${b.status}`,
              "invalid_request_error",
              null,
            ),
          );
        case "insufficient_quota":
          return send(
            429,
            error(
              "You exceeded your current quota, please check your plan and billing details.",
              "insufficient_quota",
              "insufficient_quota",
            ),
          );
        case "rate_limited":
          return send(429, error("Rate limit reached for requests", "requests", "rate_limit_exceeded"), {
            "retry-after": String(b.retryAfterS),
          });
        case "refuse_unless":
          if (text.startsWith(b.prefix)) return ok();
          return send(401, error("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"));
        case "refuse_then_ok": {
          const n = refused.get(key) ?? 0;
          if (n < b.times) {
            refused.set(key, n + 1);
            return send(401, error("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"));
          }
          return ok();
        }
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    behaviour,
    requests,
    served: (key) => requests.filter((r) => r.key === key && r.status === 200).length,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
