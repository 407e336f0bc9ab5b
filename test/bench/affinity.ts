import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { repoRoot } from "../helpers/processes.ts";

// `npm run bench:affinity` (issue 28, point 7): what prompt-cache affinity is worth. Many multi-turn
// conversations go through an embedded gateway to a mock upstream that keeps a prompt cache PER CREDENTIAL, as
// providers do: a request's input tokens are cached up to the longest prefix (whole messages) that the same
// credential saw before. The share of cached input tokens is measured
//   - over routes: one model with three routes, each its own upstream and credential;
//   - over keys: one model with one route whose upstream has a pool of three keys (issue 28's key pools);
// each with affinity (the gateway's default: the conversation's opening decides the route and key) and with
// random choice. Random choice is made by giving every call its own random prompt_cache_key: the gateway then
// places each call by an independent uniform hash, which is the weighted random choice of equal weights, while
// the mock ignores the field (its cache is keyed by credential and prefix only, so the prompt is what hits).
// Writes bench/results/affinity-latest.md.
//
//   BENCH_CONVERSATIONS (60)  conversations per run; BENCH_TURNS (6) calls each; BENCH_PARALLEL (10) at once
//   BENCH_APPS (3)            system prompts the conversations share (each ~1,000 tokens)
// Each turn adds an answer of ~300 tokens and a follow-up of ~50, so a conversation's own part of its prompt grows
// from ~20 tokens to ~1,800 by the sixth turn, beside the shared system prompt.

const CONVERSATIONS = Number(process.env.BENCH_CONVERSATIONS ?? 60);
const TURNS = Number(process.env.BENCH_TURNS ?? 6);
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 10);
const APPS = Number(process.env.BENCH_APPS ?? 3);
const ROUTES_MODEL = "affinity-routes-2025-01-01";
const KEYS_MODEL = "affinity-keys-2025-01-01";

const tokens = (s: string) => Math.ceil(s.length / 4);
interface Message {
  role: string;
  content: string;
}

/** The mock: per credential, the set of message prefixes it has seen (as hashes). */
function startCachingMock(): Promise<{ url: string; server: Server; perCredential: Map<string, number> }> {
  const seen = new Map<string, Set<string>>();
  const perCredential = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const credential = req.headers.authorization ?? "";
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { model: string; messages: Message[] };
      let cache = seen.get(credential);
      if (!cache) seen.set(credential, (cache = new Set()));
      perCredential.set(credential, (perCredential.get(credential) ?? 0) + 1);
      // Every prefix of whole messages: the longest one seen before is what the cache holds of this prompt.
      const h = createHash("sha256");
      let prompt = 0;
      let cached = 0;
      for (const m of body.messages) {
        h.update(`${m.role}\u0000${m.content}\u0000`);
        prompt += tokens(m.content);
        const key = h.copy().digest("hex");
        if (cache.has(key) && cached === prompt - tokens(m.content)) cached = prompt;
        cache.add(key);
      }
      const answer = {
        id: "chatcmpl-affinity",
        object: "chat.completion",
        created: 1_700_000_000,
        model: body.model,
        choices: [{ index: 0, message: { role: "assistant", content: "Noted." }, finish_reason: "stop" }],
        usage: {
          prompt_tokens: prompt,
          completion_tokens: 2,
          total_tokens: prompt + 2,
          prompt_tokens_details: { cached_tokens: cached },
        },
      };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(answer));
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server, perCredential }),
    ),
  );
}

const systemPrompt = (app: number) =>
  `You are assistant #${app} of a travel agency. ` +
  `Answer politely, cite the booking rules, never invent prices. `.repeat(60);

interface RunResult {
  prompt: number;
  cached: number;
  calls: number;
}

async function runConversations(gw: Gateway, apiKey: string, model: string, random: boolean): Promise<RunResult> {
  const result: RunResult = { prompt: 0, cached: 0, calls: 0 };
  // A fresh run tag: conversations of another run never share a prefix with this one.
  const tag = Math.random().toString(36).slice(2);
  let next = 0;
  const one = async (c: number) => {
    const messages: Message[] = [
      { role: "system", content: systemPrompt(c % APPS) + ` (run ${tag})` },
      { role: "user", content: `Conversation ${c}: I would like to plan a trip to city number ${c}.` },
    ];
    for (let t = 0; t < TURNS; t++) {
      const body: Record<string, unknown> = { model, messages };
      if (random) body.prompt_cache_key = `random-${Math.random()}`;
      const res = await fetch(`${gw.bases[0]}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      if (res.status !== 200) throw new Error(`call failed: ${res.status} ${await res.text()}`);
      const answer = (await res.json()) as {
        usage: { prompt_tokens: number; prompt_tokens_details?: { cached_tokens?: number } };
      };
      result.prompt += answer.usage.prompt_tokens;
      result.cached += answer.usage.prompt_tokens_details?.cached_tokens ?? 0;
      result.calls++;
      // An answer of ~300 tokens and a follow-up of ~50: the conversation's own part of the prompt grows each turn.
      messages.push(
        {
          role: "assistant",
          content: `Answer ${t} for conversation ${c}: ` + "Here is the itinerary, day by day. ".repeat(35),
        },
        {
          role: "user",
          content: `Turn ${t + 1} of conversation ${c}: ` + "and what about the hotel near the station? ".repeat(5),
        },
      );
    }
  };
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      while (next < CONVERSATIONS) await one(next++);
    }),
  );
  return result;
}

async function main() {
  const mock = await startCachingMock();
  const routes = [0, 1, 2].map((i) => ({
    name: `affinity-r${i}`,
    protocol: "openai",
    baseUrl: mock.url,
    apiKey: `sk-route-${i}`,
  }));
  const pool = {
    name: "affinity-pool",
    protocol: "openai",
    baseUrl: mock.url,
    keys: [0, 1, 2].map((i) => ({ id: `k${i}`, apiKey: `sk-key-${i}` })),
  };
  const models = (withKeys: boolean) => [
    {
      id: ROUTES_MODEL,
      price: { input: 1, output: 1 },
      routes: routes.map((r) => ({ upstream: r.name, model: "affinity-up" })),
    },
    ...(withKeys
      ? [{ id: KEYS_MODEL, price: { input: 1, output: 1 }, routes: [{ upstream: pool.name, model: "affinity-up" }] }]
      : []),
  ];
  let gw: Gateway;
  let withKeys = true;
  try {
    gw = await startGateway("embedded", { config: { upstreams: [...routes, pool], models: models(true) } });
  } catch (err) {
    // A gateway without key pools refuses `keys`: measure over routes only.
    console.error(`key pools not available (${(err as Error).message.split("\n")[0]}): measuring over routes only`);
    withKeys = false;
    gw = await startGateway("embedded", { config: { upstreams: routes, models: models(false) } });
  }
  try {
    await gw.admin("account create", { name: "affinity", balance: "1000" });
    const apiKey = (await gw.admin<{ key: string }>("key create", { account: "affinity" })).key;
    await waitForKey(gw, apiKey);
    const rows: string[] = [];
    for (const [what, model] of [
      ["3 routes of one model", ROUTES_MODEL],
      ...(withKeys ? [["3 keys of one route", KEYS_MODEL]] : []),
    ] as [string, string][]) {
      for (const random of [false, true]) {
        mock.perCredential.clear();
        const started = Date.now();
        const r = await runConversations(gw, apiKey, model, random);
        const share = (100 * r.cached) / r.prompt;
        const spread = [...mock.perCredential.values()].sort((a, b) => b - a).join(" / ");
        const line = `| ${what} | ${random ? "random choice" : "affinity"} | ${r.calls} | ${r.prompt} | ${r.cached} | ${share.toFixed(1)} % | ${spread} | ${((Date.now() - started) / 1000).toFixed(1)} s |`;
        console.log(line);
        rows.push(line);
      }
    }
    const md = [
      "# Prompt-cache affinity (npm run bench:affinity)",
      "",
      `${CONVERSATIONS} conversations of ${TURNS} turns (${PARALLEL} at once), ${APPS} shared system prompts of ~1,000 tokens, answers of`,
      "~300 tokens and follow-ups of ~50 (each conversation's own part grows each turn), against a mock",
      "whose prompt cache is per credential (cached = the longest prefix of whole messages the same credential saw).",
      "Random choice: each call with its own random prompt_cache_key (an independent uniform placement).",
      "",
      "| spread over | choice | calls | input tokens | cached | cached share | calls per credential | time |",
      "|---|---|---:|---:|---:|---:|---|---:|",
      ...rows,
      "",
      `(${new Date().toISOString()})`,
      "",
    ].join("\n");
    mkdirSync(join(repoRoot, "bench/results"), { recursive: true });
    writeFileSync(join(repoRoot, "bench/results/affinity-latest.md"), md);
    console.log(md);
  } finally {
    await gw.stop();
    mock.server.close();
  }
}

await main();
