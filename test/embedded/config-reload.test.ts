import { writeFileSync } from "node:fs";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";
import { startOpenAIMock, type OpenAIMock } from "../mocks/openai-upstream.ts";

// Config hot reload (GATEWAY_CONFIG): a changed file applies without a restart through the policy push; an
// invalid one is refused with its reason in the log and the running config stays; SIGHUP reloads at once.

const A = "acme-chat-2025-01-01";
const B = "acme-chat-2025-06-01";
const C = "acme-chat-2025-09-01";
let mock: OpenAIMock;
let gw: Gateway;
let apiKey: string;
let configPath: string;

const config = (models: string[]) => ({
  upstreams: [{ name: "openai-main", protocol: "openai", baseUrl: "MOCK_URL", apiKey: "${UPSTREAM_KEY}" }],
  models: models.map((id) => ({
    id,
    reasoning: false,
    price: { input: 0.15, output: 0.6 },
    routes: [{ upstream: "openai-main", model: "gpt-4o-mini", weight: 1 }],
  })),
});
const write = (text: string) => writeFileSync(configPath, text);
const writeModels = (models: string[]) => write(JSON.stringify(config(models)).replace("MOCK_URL", mock.url));
const listed = async () => {
  const client = new OpenAI({ baseURL: `${gw.bases[0]}/v1`, apiKey, maxRetries: 0 });
  return (await client.models.list()).data.map((m) => m.id).sort();
};
const log = () => gw.procs.map((p) => p.output()).join("\n");

beforeAll(async () => {
  mock = await startOpenAIMock("sk-upstream-reload");
  gw = await startGateway("embedded", { config: {}, env: { UPSTREAM_KEY: "sk-upstream-reload", LOG_LEVEL: "info" } });
  configPath = gw.cliEnv.GATEWAY_CONFIG!;
  // The gateway started on an empty config; the first real one arrives as a reload.
  writeModels([A]);
  await gw.admin("account create", { name: "acme", balance: "10" });
  apiKey = (await gw.admin<{ key: string }>("key create", { account: "acme" })).key;
  await waitForKey(gw, apiKey);
  await eventually(listed, (ids) => ids.includes(A), 10_000);
}, 240_000);

afterAll(async () => {
  await gw?.stop();
  await mock?.close();
});

describe("config hot reload", () => {
  it("applies a changed file without a restart: a new model answers", async () => {
    writeModels([A, B]);
    expect(await eventually(listed, (ids) => ids.includes(B), 10_000)).toEqual([A, B]);
    const client = new OpenAI({ baseURL: `${gw.bases[0]}/v1`, apiKey, maxRetries: 0 });
    const answer = await client.chat.completions.create({ model: B, messages: [{ role: "user", content: "hi" }] });
    expect(answer.usage?.total_tokens).toBeGreaterThan(0);
  });

  it("refuses an invalid file with the reason in the log, and keeps the running config", async () => {
    write("models: [ { id: broken");
    await eventually(
      async () => log(),
      (text) => text.includes("config reload refused"),
      10_000,
    );
    write(
      JSON.stringify({
        upstreams: [],
        models: [
          {
            id: C,
            reasoning: false,
            price: { input: 1, output: 1 },
            routes: [{ upstream: "nowhere", model: "x", weight: 1 }],
          },
        ],
      }),
    );
    await eventually(
      async () => log(),
      (text) => text.includes("routes to unknown upstream nowhere"),
      10_000,
    );
    expect(await listed()).toEqual([A, B]);
    expect(gw.procs[0]!.child.exitCode).toBeNull();
  });

  it("reloads on SIGHUP", async () => {
    writeModels([A, B, C]);
    // before the file watch's debounce has fired: the signal's reload applies it
    gw.procs[0]!.child.kill("SIGHUP");
    expect(await eventually(listed, (ids) => ids.includes(C), 10_000)).toEqual([A, B, C]);
    expect(log()).toMatch(/"reason":"SIGHUP"[^\n]*config reloaded|config reloaded[^\n]*"reason":"SIGHUP"/);
  });
});
