import { describe, expect, it } from "vitest";
import { type Gateway, waitForKey } from "./gateway.ts";
import { eventually } from "./processes.ts";
import type { Scenario } from "./scenario-suite.ts";
import { startOpenAIMock, type OpenAIMock } from "../mocks/openai-upstream.ts";
import { startAnthropicUpstream } from "../mocks/anthropic-upstream.ts";
import { DEFAULT_MOCK_KEY, type MockUpstream } from "../mocks/script.ts";

// Fallbacks and prompt-cache affinity end to end (issue 28 points 5–7, docs/routing.md), the same in both modes
// (test/embedded/fallbacks.test.ts, test/services/fallbacks.test.ts): a model whose only route fails before the
// first byte is served by its fallbacks in order, billed at the serving model's price and named in the answer;
// the key's allowed models apply to each; a stream that broke after its first byte is not retried elsewhere; a
// request's own `models` and x-modelgate-fallbacks work and never reach the upstream; calls of one
// conversation keep their route, on every replica, while different conversations spread.

const UP_KEY = "sk-upstream-test";
export const MAIN = "fb-main-2025-01-01";
export const SECRET = "fb-secret-2025-01-01"; // a fallback the key may not call
export const BACKUP = "fb-backup-2025-01-01";
export const CLAUDE = "fb-claude-2025-01-01";
export const OTHER = "fb-other-2025-01-01"; // no fallbacks of its own
export const AFFINE = "fb-affine-2025-01-01"; // three routes of one priority

export interface FallbackScenario {
  down: OpenAIMock;
  backup: OpenAIMock;
  secret: OpenAIMock;
  claude: MockUpstream;
  affine: OpenAIMock[];
  close(): Promise<void>;
}

export async function startFallbackMocks(): Promise<FallbackScenario> {
  const [down, backup, secret, claude, ...affine] = await Promise.all([
    startOpenAIMock(UP_KEY),
    startOpenAIMock(UP_KEY),
    startOpenAIMock(UP_KEY),
    startAnthropicUpstream(),
    startOpenAIMock(UP_KEY),
    startOpenAIMock(UP_KEY),
    startOpenAIMock(UP_KEY),
  ]);
  return {
    down: down as OpenAIMock,
    backup: backup as OpenAIMock,
    secret: secret as OpenAIMock,
    claude: claude as MockUpstream,
    affine: affine as OpenAIMock[],
    close: async () => {
      await Promise.all([down, backup, secret, claude, ...affine].map((m) => m!.close()));
    },
  };
}

export function fallbackConfig(s: FallbackScenario): { config: unknown; env: NodeJS.ProcessEnv } {
  const openai = (name: string, m: OpenAIMock) => ({ name, protocol: "openai", baseUrl: m.url, apiKey: "${UP_KEY}" });
  return {
    env: {
      UP_KEY,
      CLAUDE_KEY: DEFAULT_MOCK_KEY,
      MODELGATE_RETRY_ATTEMPTS: "1",
      // The failing upstream stays in service: every call tries it, so each test sees its own fallback happen.
      MODELGATE_BREAKER_FAILURES: "100000",
    },
    config: {
      upstreams: [
        openai("down", s.down),
        openai("backup", s.backup),
        openai("secret", s.secret),
        { name: "claude", protocol: "anthropic", baseUrl: s.claude.url, apiKey: "${CLAUDE_KEY}" },
        ...s.affine.map((m, i) => openai(`affine-${i}`, m)),
      ],
      models: [
        {
          id: MAIN,
          price: { input: 1, output: 2 },
          routes: [{ upstream: "down", model: "main-up" }],
          fallbacks: [SECRET, "fb-missing-2025-01-01", BACKUP, CLAUDE],
        },
        { id: SECRET, price: { input: 0, output: 0 }, routes: [{ upstream: "secret", model: "secret-up" }] },
        { id: BACKUP, price: { input: 10, output: 20 }, routes: [{ upstream: "backup", model: "backup-up" }] },
        { id: CLAUDE, price: { input: 3, output: 15 }, routes: [{ upstream: "claude", model: "claude-up" }] },
        { id: OTHER, price: { input: 1, output: 1 }, routes: [{ upstream: "down", model: "other-up" }] },
        {
          id: AFFINE,
          price: { input: 1, output: 1 },
          routes: s.affine.map((_, i) => ({ upstream: `affine-${i}`, model: "affine-up" })),
        },
      ],
    },
  };
}

interface Row {
  requestId: string;
  model: string;
  status: number;
  costMicro: string;
  promptTokens: number;
  completionTokens: number;
}

/** The cases; `gw` is started with fallbackConfig(s). */
export function fallbackCases(get: () => { gw: Gateway; s: FallbackScenario }): void {
  let apiKey = "";
  const base = (i = 0) => {
    const bases = get().gw.bases;
    return bases[i % bases.length]!;
  };
  const chat = (body: Record<string, unknown>, headers: Record<string, string> = {}, i = 0) =>
    fetch(`${base(i)}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
  const rows = () => get().gw.admin<Row[]>("usage list", { account: "fallbacks", limit: "100" });
  const rowOf = (requestId: string) =>
    eventually(rows, (r) => r.some((x) => x.requestId === requestId), 15_000).then((r) =>
      r.find((x) => x.requestId === requestId)!,
    );
  const modelsAsked = (m: OpenAIMock, from: number) => m.requests.slice(from).map((r) => r.body.model);

  it("sets up a key that may call every model but one", async () => {
    const { gw } = get();
    await gw.admin("account create", { name: "fallbacks", balance: "100" });
    apiKey = (
      await gw.admin<{ key: string }>("key create", {
        account: "fallbacks",
        models: [MAIN, BACKUP, CLAUDE, OTHER, AFFINE].join(","),
      })
    ).key;
    await waitForKey(gw, apiKey);
  });

  describe("a model's fallbacks", () => {
    it("serve in order when its routes fail before the first byte: named in the answer, billed at their price", async () => {
      const { s } = get();
      s.down.fallback = { status: 503 };
      s.backup.fallback = { content: "from backup", promptTokens: 10, completionTokens: 5 };
      const [downFrom, backupFrom, secretFrom] = [
        s.down.requests.length,
        s.backup.requests.length,
        s.secret.requests.length,
      ];
      const res = await chat({ model: MAIN, messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { model: string; choices: { message: { content: string } }[] };
      expect(body.model).toBe(BACKUP);
      expect(body.choices[0]!.message.content).toBe("from backup");
      expect(modelsAsked(s.down, downFrom)).toEqual(["main-up"]);
      // The fallback the key may not call is skipped (never asked), as is one that does not exist.
      expect(s.secret.requests.length).toBe(secretFrom);
      expect(modelsAsked(s.backup, backupFrom)).toEqual(["backup-up"]);
      const row = await rowOf(res.headers.get("x-request-id")!);
      // 10 input × 10 + 5 output × 20 per 1M tokens: the backup's price, not the model asked for (1 and 2).
      expect(row).toMatchObject({ model: BACKUP, status: 200, promptTokens: 10, completionTokens: 5 });
      expect(row.costMicro).toBe(String(10 * 10 + 5 * 20));
    });

    it("go on down the list, to another protocol, when the first fallback fails too", async () => {
      const { s } = get();
      s.down.fallback = { status: 500 };
      s.backup.fallback = { status: 429 };
      const claudeFrom = s.claude.requests.length;
      const res = await chat({ model: MAIN, messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { model: string }).model).toBe(CLAUDE);
      expect(s.claude.requests.slice(claudeFrom).map((r) => (r.body as { model: string }).model)).toEqual([
        "claude-up",
      ]);
      expect((await rowOf(res.headers.get("x-request-id")!)).model).toBe(CLAUDE);
    });

    it("are not tried when the stream broke after its first byte", async () => {
      const { s } = get();
      s.down.fallback = { content: "one two three four", breakAfterChunks: 1 };
      s.backup.fallback = { content: "from backup" };
      const [backupFrom, claudeFrom] = [s.backup.requests.length, s.claude.requests.length];
      const res = await chat({ model: MAIN, stream: true, messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('"model":"fb-main-2025-01-01"');
      expect(text).not.toContain("from backup");
      expect(s.backup.requests.length).toBe(backupFrom);
      expect(s.claude.requests.length).toBe(claudeFrom);
    });

    it("are not tried when the upstream found the request itself invalid", async () => {
      const { s } = get();
      s.down.fallback = { status: 400, errorMessage: "bad temperature" };
      const backupFrom = s.backup.requests.length;
      const res = await chat({ model: MAIN, messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(400);
      expect(s.backup.requests.length).toBe(backupFrom);
    });
  });

  describe("a request's own fallbacks", () => {
    it("`models` (model omitted) is tried in order and never reaches the upstream", async () => {
      const { s } = get();
      s.down.fallback = { status: 503 };
      s.backup.fallback = { content: "from backup" };
      const [downFrom, backupFrom, secretFrom] = [
        s.down.requests.length,
        s.backup.requests.length,
        s.secret.requests.length,
      ];
      const res = await chat({ models: [OTHER, SECRET, BACKUP], messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { model: string }).model).toBe(BACKUP);
      expect(modelsAsked(s.down, downFrom)).toEqual(["other-up"]);
      expect(s.secret.requests.length).toBe(secretFrom); // not the key's to call, even when the request names it
      for (const r of [...s.down.requests.slice(downFrom), ...s.backup.requests.slice(backupFrom)])
        expect(r.body).not.toHaveProperty("models");
    });

    it("`models` is taken out of a body passed through as it is when the first model serves", async () => {
      const { s } = get();
      s.down.fallback = { content: "from down" };
      const downFrom = s.down.requests.length;
      const res = await chat({ model: OTHER, models: [OTHER, BACKUP], messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { model: string }).model).toBe(OTHER);
      expect(s.down.requests.slice(downFrom).map((r) => r.body)).toEqual([
        { model: "other-up", messages: [{ role: "user", content: "hi" }] },
      ]);
    });

    it("x-modelgate-fallbacks works for an Anthropic client and is not forwarded", async () => {
      const { s } = get();
      s.down.fallback = { status: 502 };
      const claudeFrom = s.claude.requests.length;
      const res = await fetch(`${base()}/v1/messages`, {
        method: "POST",
        headers: {
          "x-api-key": apiKey,
          "anthropic-version": "2023-06-01",
          "content-type": "application/json",
          "x-modelgate-fallbacks": ` ${CLAUDE} `,
        },
        body: JSON.stringify({ model: OTHER, max_tokens: 50, messages: [{ role: "user", content: "hi" }] }),
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as { model: string }).model).toBe(CLAUDE);
      const sent = s.claude.requests.slice(claudeFrom);
      expect(sent).toHaveLength(1);
      expect(sent[0]!.headers["x-modelgate-fallbacks"]).toBeUndefined();
      expect(JSON.stringify(sent[0]!.body)).not.toContain("fb-");
    });

    it("are bounded: a 400 in the client's shape", async () => {
      const six = Array.from({ length: 6 }, (_, i) => `m${i}-2025-01-01`);
      const res = await chat({ models: six, messages: [{ role: "user", content: "hi" }] });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { code: string; param: string; message: string } };
      expect(body.error).toMatchObject({ code: "invalid_fallbacks", param: "models" });
      expect(body.error.message).toContain("request id:");
      expect((await chat({ models: ["x".repeat(201)], messages: [] })).status).toBe(400);
      const a = await fetch(`${base()}/v1/messages`, {
        method: "POST",
        headers: {
          "x-api-key": apiKey,
          "anthropic-version": "2023-06-01",
          "content-type": "application/json",
          "x-modelgate-fallbacks": six.join(","),
        },
        body: JSON.stringify({ model: OTHER, max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
      });
      expect(a.status).toBe(400);
      expect(((await a.json()) as { type: string; error: { type: string } }).error.type).toBe("invalid_request_error");
    });
  });

  describe("prompt-cache affinity", () => {
    const onWhich = (before: number[]): number[] => get().s.affine.map((m, i) => m.requests.length - before[i]!);

    it("keeps a conversation's calls on one route, on every replica", async () => {
      const { s } = get();
      const system = { role: "system", content: "You are the concierge of a small hotel. ".repeat(50) };
      for (let c = 0; c < 4; c++) {
        const before = s.affine.map((m) => m.requests.length);
        const messages: { role: string; content: string }[] = [system, { role: "user", content: `guest ${c} asks` }];
        for (let turn = 0; turn < 4; turn++) {
          const res = await chat({ model: AFFINE, messages }, {}, turn);
          expect(res.status).toBe(200);
          messages.push({ role: "assistant", content: "noted" }, { role: "user", content: `turn ${turn}` });
        }
        expect(onWhich(before).sort()).toEqual([0, 0, 4]);
      }
    });

    it("spreads different conversations over the routes", async () => {
      const { s } = get();
      const before = s.affine.map((m) => m.requests.length);
      for (let c = 0; c < 30; c++) {
        const res = await chat({ model: AFFINE, messages: [{ role: "user", content: `conversation ${c}` }] });
        expect(res.status).toBe(200);
      }
      const counts = onWhich(before);
      expect(counts.reduce((a, b) => a + b, 0)).toBe(30);
      // Each route's share of 30 conversations at 1/3: fewer than 3 on one would be a 1-in-1000 event.
      for (const n of counts) expect(n).toBeGreaterThanOrEqual(3);
    });

    it("follows the client's prompt_cache_key", async () => {
      const { s } = get();
      const before = s.affine.map((m) => m.requests.length);
      for (let i = 0; i < 5; i++) {
        const res = await chat(
          { model: AFFINE, prompt_cache_key: "tenant-7", messages: [{ role: "user", content: `unrelated ${i}` }] },
          {},
          i,
        );
        expect(res.status).toBe(200);
      }
      expect(onWhich(before).sort()).toEqual([0, 0, 5]);
    });
  });
}

/** The scenario as test/embedded/fallbacks.test.ts and test/services/fallbacks.test.ts run it. */
export const fallbacks: Scenario<FallbackScenario> = {
  name: "fallbacks and affinity",
  start: startFallbackMocks,
  config: fallbackConfig,
  cases: fallbackCases,
};
