import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { UsageEvent } from "../contract/usage.ts";
import { UsageSpool } from "./spool.ts";
import { usageEvent as event } from "../../../test/helpers/usage-event.ts";

const ids = (events: UsageEvent[]) => events.map((e) => e.requestId);
const lines = (...events: UsageEvent[]) => events.map((e) => JSON.stringify(e) + "\n").join("");

describe("UsageSpool", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "mg-spool-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const collect = () => {
    const got: UsageEvent[] = [];
    return { got, send: async (batch: UsageEvent[]) => void got.push(...batch) };
  };

  it("makes appended events durable as JSON lines on flush", async () => {
    const spool = await UsageSpool.open(dir);
    spool.append(event(1));
    spool.append(event(2));
    await spool.flush();
    expect(await readFile(join(dir, "1.jsonl"), "utf8")).toBe(lines(event(1), event(2)));
    await spool.close();
  });

  it("syncs by itself after the interval, and at once when a batch is full", async () => {
    const spool = await UsageSpool.open(dir, { syncIntervalMs: 10, syncBatch: 3 });
    // Each flush the spool starts by itself is handed to the test, which awaits it instead of sleeping.
    const started: Promise<void>[] = [];
    let onStart = () => {};
    const flush = spool.flush.bind(spool);
    vi.spyOn(spool, "flush").mockImplementation(() => {
      const p = flush();
      started.push(p);
      onStart();
      return p;
    });
    const nextFlush = () => new Promise<void>((resolve) => (onStart = resolve)).then(() => started.at(-1));

    const byTimer = nextFlush();
    spool.append(event(1));
    await byTimer; // the interval's flush, written and synced
    expect(await readFile(join(dir, "1.jsonl"), "utf8")).toBe(lines(event(1)));
    spool.append(event(2));
    spool.append(event(3));
    expect(started).toHaveLength(1); // below the batch size: nothing yet
    spool.append(event(4)); // the third since the last flush fills the batch: a flush starts at once
    expect(started).toHaveLength(2);
    await started[1];
    expect(await readFile(join(dir, "1.jsonl"), "utf8")).toBe(lines(event(1), event(2), event(3), event(4)));
    await spool.close();
  });

  it("replays in order, in batches, then removes what was delivered", async () => {
    const spool = await UsageSpool.open(dir);
    for (let i = 1; i <= 5; i++) spool.append(event(i));
    const batches: string[][] = [];
    const r = await spool.replay(async (b) => void batches.push(ids(b)), 2);
    expect(r).toEqual({ sent: 5, complete: true });
    expect(batches).toEqual([["req-1", "req-2"], ["req-3", "req-4"], ["req-5"]]);
    expect(await readdir(dir)).toEqual([]);
    expect(await spool.replay(async () => {}, 2)).toEqual({ sent: 0, complete: true });
    await spool.close();
  });

  it("keeps what the sink did not acknowledge and resumes after the last acknowledged batch", async () => {
    const errors: unknown[] = [];
    const spool = await UsageSpool.open(dir, { onError: (e) => errors.push(e) });
    for (let i = 1; i <= 5; i++) spool.append(event(i));
    let calls = 0;
    const r = await spool.replay(async () => {
      if (++calls === 2) throw new Error("redis down");
    }, 2);
    expect(r).toEqual({ sent: 2, complete: false });
    expect(errors.map((e) => (e as Error).message)).toEqual(["redis down"]);
    const { got, send } = collect();
    expect(await spool.replay(send, 2)).toEqual({ sent: 3, complete: true });
    expect(ids(got)).toEqual(["req-3", "req-4", "req-5"]);
    await spool.close();
  });

  it("reports a replay's failed send through onSendError when given, not onError", async () => {
    const errors: string[] = [];
    const sendErrors: string[] = [];
    const spool = await UsageSpool.open(dir, {
      onError: (e) => errors.push((e as Error).message),
      onSendError: (e) => sendErrors.push((e as Error).message),
    });
    spool.append(event(1));
    const r = await spool.replay(async () => {
      throw new Error("redis down");
    });
    expect(r).toEqual({ sent: 0, complete: false });
    expect(sendErrors).toEqual(["redis down"]);
    expect(errors).toEqual([]);
    await spool.close();
  });

  it("survives a restart: a new process replays what the old one spooled, torn last line ignored", async () => {
    await writeFile(join(dir, "7.jsonl"), lines(event(1), event(2)) + JSON.stringify(event(3)).slice(0, 40));
    await writeFile(join(dir, "8.jsonl"), lines(event(4)));
    const spool = await UsageSpool.open(dir);
    spool.append(event(5)); // goes to segment 9
    await spool.flush();
    expect((await readdir(dir)).sort()).toEqual(["7.jsonl", "8.jsonl", "9.jsonl"]);
    const { got, send } = collect();
    expect(await spool.replay(send)).toEqual({ sent: 4, complete: true });
    expect(ids(got)).toEqual(["req-1", "req-2", "req-4", "req-5"]);
    await spool.close();
  });

  it("resumes from an acknowledged offset left by a crash", async () => {
    const body = lines(event(1), event(2), event(3));
    await writeFile(join(dir, "1.jsonl"), body);
    await writeFile(join(dir, "1.ack"), String(Buffer.byteLength(lines(event(1)))));
    const spool = await UsageSpool.open(dir);
    expect(await spool.backlogBytes()).toBe(Buffer.byteLength(lines(event(2), event(3))));
    const { got, send } = collect();
    await spool.replay(send);
    expect(ids(got)).toEqual(["req-2", "req-3"]);
    expect(await spool.backlogBytes()).toBe(0);
    await spool.close();
  });

  it("skips and reports lines that are not valid events", async () => {
    await writeFile(join(dir, "1.jsonl"), lines(event(1)) + "{not json}\n" + '{"requestId":""}\n' + lines(event(2)));
    const corrupt: string[] = [];
    const spool = await UsageSpool.open(dir, { onCorrupt: (seg, line) => corrupt.push(`${seg}: ${line}`) });
    const { got, send } = collect();
    expect(await spool.replay(send)).toEqual({ sent: 2, complete: true });
    expect(ids(got)).toEqual(["req-1", "req-2"]);
    expect(corrupt).toEqual(["1.jsonl: {not json}", '1.jsonl: {"requestId":""}']);
    await spool.close();
  });

  it("leaves events appended during a replay for the next one", async () => {
    const spool = await UsageSpool.open(dir);
    spool.append(event(1));
    const { got, send } = collect();
    const r = await spool.replay(async (b) => {
      spool.append(event(99));
      await send(b);
    });
    expect(r).toEqual({ sent: 1, complete: true });
    expect(ids(got)).toEqual(["req-1"]);
    const second = collect();
    await spool.replay(second.send);
    expect(ids(second.got)).toEqual(["req-99"]);
    await spool.close();
  });

  it("rolls over to new segments and keeps the order across them", async () => {
    const spool = await UsageSpool.open(dir, { maxSegmentBytes: 1 });
    for (let i = 1; i <= 3; i++) {
      spool.append(event(i));
      await spool.flush();
    }
    expect((await readdir(dir)).sort()).toEqual(["1.jsonl", "2.jsonl", "3.jsonl"]);
    const { got, send } = collect();
    await spool.replay(send);
    expect(ids(got)).toEqual(["req-1", "req-2", "req-3"]);
    await spool.close();
  });

  it("shares one replay between concurrent callers", async () => {
    const spool = await UsageSpool.open(dir);
    spool.append(event(1));
    const { got, send } = collect();
    const [a, b] = await Promise.all([spool.replay(send), spool.replay(send)]);
    expect(a).toEqual({ sent: 1, complete: true });
    expect(b).toBe(a);
    expect(ids(got)).toEqual(["req-1"]);
    await spool.close();
  });
});
