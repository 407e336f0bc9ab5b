import { readFileSync, readdirSync } from "node:fs";
import { request } from "node:http";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually, freePort, type Proc, startTs, waitForHttp } from "../helpers/processes.ts";
import { startOpenAIMock, type OpenAIMock } from "../mocks/openai-upstream.ts";

// The production entry of the data plane (workers.ts, what `npm run start:data-plane` runs): one primary
// forking MODELGATE_WORKERS replicas on one port. Calls are spread over the workers and all charged; a worker
// that dies is replaced; SIGTERM drains every worker and the primary exits 0.

const MODEL = "gpt-4o-mini-2024-07-18";
let mock: OpenAIMock;
let gw: Gateway;
let primary: Proc;
let base: string;
let apiKey: string;

/** pids of the live worker processes whose parent is `ppid` (not tsx's esbuild helper) */
const childrenOf = (ppid: number): number[] =>
  readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((pid) => {
      try {
        // /proc/<pid>/stat: "pid (comm) state ppid …"; comm may hold spaces, so read after the last ')'
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        const isChild = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === ppid;
        return isChild && readFileSync(`/proc/${pid}/environ`, "utf8").includes("MODELGATE_WORKER_INDEX=");
      } catch {
        return false;
      }
    })
    .map(Number);

beforeAll(async () => {
  mock = await startOpenAIMock("sk-upstream-workers");
  gw = await startGateway("distributed", {
    config: {
      upstreams: [{ name: "openai-main", protocol: "openai", baseUrl: mock.url, apiKey: "${UPSTREAM_KEY}" }],
      models: [
        {
          id: MODEL,
          reasoning: false,
          price: { input: 0.15, output: 0.6 },
          routes: [{ upstream: "openai-main", model: MODEL, weight: 1 }],
        },
      ],
    },
    env: { UPSTREAM_KEY: "sk-upstream-workers" },
    replicas: 0,
  });
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  primary = startTs("data-plane/src/workers.ts", {
    ...gw.cliEnv,
    DATABASE_URL: "",
    PORT: String(port),
    MODELGATE_WORKERS: "2",
  });
  await waitForHttp(`${base}/readyz`, primary, 120_000);
  await gw.admin("account create", { name: "initech", balance: "50" });
  apiKey = (await gw.admin<{ key: string }>("key create", { account: "initech", name: "workers" })).key;
  await waitForKey({ ...gw, bases: [base] }, apiKey);
  // waitForKey's requests may all reach one worker (one kept-alive connection): wait until requests on new
  // connections, which the primary hands to the workers in turn, find the key in both.
  await eventually(
    () => Promise.all(Array.from({ length: 4 }, () => policyCode(`${base}/v1/models/no-such-model-2000-01-01`))),
    (codes) => codes.every((c) => c !== "invalid_api_key"),
    5_000,
    50,
  );
}, 240_000);

/** The error code a request with the key gets, on a connection of its own. */
function policyCode(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, headers: { authorization: `Bearer ${apiKey}` } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d));
      res.on("end", () => resolve((JSON.parse(body) as { error?: { code?: string } }).error?.code ?? "ok"));
    });
    req.on("error", reject);
    req.end();
  });
}

afterAll(async () => {
  await primary?.stop("SIGKILL");
  await gw?.stop();
  await mock?.close();
});

describe("data plane workers (MODELGATE_WORKERS)", () => {
  it("runs one replica per worker behind one port, every call answered and charged once", async () => {
    expect(childrenOf(primary.child.pid!)).toHaveLength(2);
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0 });
    // Separate connections, so the primary's round robin reaches both workers.
    const answers = await Promise.all(
      Array.from({ length: 24 }, () =>
        client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }] }),
      ),
    );
    expect(answers.every((a) => a.usage && a.usage.total_tokens > 0)).toBe(true);
    const rows = await eventually(
      () => gw.usage("initech"),
      (r) => r.length >= 24,
      15_000,
    );
    expect(rows).toHaveLength(24);
    expect(new Set(rows.map((r) => r.requestId)).size).toBe(24);
  });

  it("replaces a worker that dies, and keeps answering meanwhile", async () => {
    const before = childrenOf(primary.child.pid!);
    process.kill(before[0]!, "SIGKILL");
    const after = await eventually(
      async () => childrenOf(primary.child.pid!),
      (pids) => pids.length === 2 && !pids.includes(before[0]!),
      15_000,
    );
    expect(after).toContain(before[1]!);
    await waitForHttp(`${base}/readyz`, primary, 30_000);
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0 });
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "again" }] }),
      ),
    );
    expect(answers).toHaveLength(8);
  });

  it("drains every worker on SIGTERM and exits 0", async () => {
    const workers = childrenOf(primary.child.pid!);
    expect(await primary.stop("SIGTERM")).toBe(0);
    for (const pid of workers) expect(() => process.kill(pid, 0)).toThrow();
  });
});
