import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COLUMNS } from "../../../control-plane/src/exports/format.ts";
import { customer, exportFinished, operatorClient, startHarness, type Client, type Harness } from "./harness.ts";

let h: Harness;
let ops: Client;
let a: Awaited<ReturnType<typeof customer>>;
let b: Awaited<ReturnType<typeof customer>>;
let keyId: string;
const ROWS = 100_000;
const T0 = Date.parse("2026-04-01T00:00:00Z");

beforeAll(async () => {
  h = await startHarness("gql_exports");
  ops = await operatorClient(h);
  a = await customer(h, ops, "Exporter");
  b = await customer(h, ops, "Other");
  keyId = (await a.client.gql(`mutation { createApiKey(input: { name: "batch, \\"main\\"" }) { apiKey { id } } }`))
    .createApiKey.apiKey.id;
  // 100k rows, three per second; every 100th a 429; several rows share a timestamp to exercise the (started_at, id) keyset
  await h.app.prisma.$executeRawUnsafe(
    `INSERT INTO usage_logs (id, request_id, account_id, api_key_id, model, protocol, status, prompt_tokens, completion_tokens,
       cost_micro, latency_ms, started_at)
     SELECT gen_random_uuid(), 'req_' || lpad(i::text, 6, '0'), $1::uuid, $2::uuid,
       CASE WHEN i % 2 = 0 THEN 'acme-chat-2025-01-01' ELSE '=cmd-2025-01-01' END, 'openai',
       CASE WHEN i % 100 = 0 THEN 429 ELSE 200 END, i % 1000, 7, i * 10, 5,
       $3::timestamptz + ((i / 3) * interval '1 second')
     FROM generate_series(1, ${ROWS}) AS i`,
    a.accountId,
    keyId,
    new Date(T0).toISOString(),
  );
  // B's rows must never appear in A's export
  await h.app.prisma.$executeRawUnsafe(
    `INSERT INTO usage_logs (id, request_id, account_id, model, protocol, status, latency_ms, started_at)
     SELECT gen_random_uuid(), 'b_' || i, $1::uuid, 'acme-chat-2025-01-01', 'openai', 200, 1, $2::timestamptz
     FROM generate_series(1, 50) AS i`,
    b.accountId,
    new Date(T0).toISOString(),
  );
});
afterAll(async () => {
  await h?.close();
});

describe("exports", () => {
  it("streams 100k rows to CSV, downloadable by its owner, checked line by line", async () => {
    const started = await a.client.gql(`mutation { startExport(format: CSV) { id status } }`);
    expect(started.startExport.status).toBe("pending");
    const id = started.startExport.id as string;
    const done = await exportFinished(a.client, id);
    expect(done).toMatchObject({ status: "ready", rowCount: ROWS, downloadUrl: `/api/exports/${id}/download` });

    const res = await fetch(`${h.url}${done.downloadUrl}`, { headers: { cookie: a.client.cookie! } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/csv");
    expect(res.headers.get("content-disposition")).toMatch(/attachment; filename="usage-.*\.csv"/);
    const lines = (await res.text()).split("\r\n");
    expect(lines.pop()).toBe(""); // trailing newline
    expect(lines[0]).toBe(COLUMNS.join(","));
    expect(lines).toHaveLength(ROWS + 1);
    let prev = "";
    for (let i = 1; i <= ROWS; i++) {
      const line = lines[i]!;
      const n = i; // rows come out in (started_at, id) order; request ids within one second may be in any order
      const started = new Date(T0 + Math.floor(n / 3) * 1000).toISOString();
      expect(line.startsWith(`${started},req_`), `line ${i}: ${line}`).toBe(true);
      expect(started >= prev).toBe(true);
      prev = started;
      expect(line).toContain(`,${keyId},"batch, ""main""",`);
      const model = line.split(",")[5];
      expect(model === "acme-chat-2025-01-01" || model === "'=cmd-2025-01-01", line).toBe(true); // formula defused
    }
    const ids = new Set(lines.slice(1).map((l) => l.split(",")[1]));
    expect(ids.size).toBe(ROWS);
    expect([...ids].some((r) => r?.startsWith("b_"))).toBe(false);
    const row7 = lines.slice(1).find((l) => l.split(",")[1] === "req_000007")!;
    // …,protocol,status,error_code,prompt,completion,reasoning,cached,input,write 5m,write 1h,total,amount,
    // five unit prices (none: the row was written without them),estimated,end_user,tags,dropped,latency,ttft,stream
    expect(row7.endsWith(",openai,200,,7,7,0,0,0,0,0,14,0.00007,,,,,,false,,[],[],5,,false"), row7).toBe(true);

    // other users: another customer gets 404; the operator may read it
    expect((await fetch(`${h.url}${done.downloadUrl}`, { headers: { cookie: b.client.cookie! } })).status).toBe(404);
    expect((await fetch(`${h.url}${done.downloadUrl}`, { headers: { cookie: ops.cookie! } })).status).toBe(200);
    // a read token of the owner works too
    const pat = (await a.client.gql(`mutation { createPersonalAccessToken(name: "dl", scopes: [read]) { token } }`))
      .createPersonalAccessToken.token;
    const byToken = await fetch(`${h.url}${done.downloadUrl}`, { headers: { authorization: `Bearer ${pat}` } });
    expect(byToken.status).toBe(200);
    await byToken.arrayBuffer();
  });

  it("writes JSONL with filters applied", async () => {
    const r = await a.client.gql(
      `mutation { startExport(format: JSONL, filter: { status: 429, from: "2026-04-01T00:00:00Z", to: "2026-04-01T01:00:00Z" }) { id } }`,
    );
    const done = await exportFinished(a.client, r.startExport.id);
    // i % 100 == 0 and floor(i/3) < 3600 → i < 10800
    const expected = Array.from({ length: ROWS }, (_, n) => n + 1).filter(
      (i) => i % 100 === 0 && Math.floor(i / 3) < 3600,
    ).length;
    expect(expected).toBe(Math.min(107, Math.floor(ROWS / 100)));
    expect(done.rowCount).toBe(expected);
    const text = await (await fetch(`${h.url}${done.downloadUrl}`, { headers: { cookie: a.client.cookie! } })).text();
    const rows = text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(rows).toHaveLength(expected);
    for (const row of rows) {
      expect(Object.keys(row)).toEqual([...COLUMNS]);
      expect(row.status).toBe(429);
      expect(typeof row.amount).toBe("string");
    }
    expect(rows[0]).toMatchObject({
      request_id: "req_000100",
      prompt_tokens: 100,
      completion_tokens: 7,
      amount: "0.001",
      api_key_name: 'batch, "main"',
    });
  });

  it("lists exports per user and refuses bad ids", async () => {
    const mine = (await a.client.gql(`{ exports { id status format } }`)).exports as { format: string }[];
    expect(mine.map((e) => e.format).sort()).toEqual(["csv", "jsonl"].map((f) => f.toUpperCase()).sort());
    expect((await b.client.gql(`{ exports { id } }`)).exports).toEqual([]);
    expect(
      (await fetch(`${h.url}/api/exports/not-an-id/download`, { headers: { cookie: a.client.cookie! } })).status,
    ).toBe(404);
    expect(
      await a.client.code(
        `mutation { startExport(format: CSV, filter: { from: "2026-05-01T00:00:00Z", to: "2026-04-01T00:00:00Z" }) { id } }`,
      ),
    ).toBe("BAD_USER_INPUT");
  });
});
