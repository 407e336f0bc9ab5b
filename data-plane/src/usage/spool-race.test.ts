import type * as FsPromises from "node:fs/promises";
import { mkdtemp, rm, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterEach, expect, it, vi } from "vitest";
import { usageEvent as event } from "../../../test/helpers/usage-event.ts";

// A replay deletes a segment once all of it is delivered; backlogBytes lists the segments and then stats
// each. Seen in a soak 1.8 s after Redis returned: the stat of a segment the replay had just deleted threw
// ENOENT, the sink reported it as a failed usage write, and the Redis outage it reopened never closed. Here the
// deletion is made to fall exactly between the listing and the stat.

const removeBeforeStat = new Set<string>();
vi.mock("node:fs/promises", async (importOriginal) => {
  const fs = await importOriginal<typeof FsPromises>();
  return {
    ...fs,
    stat: async (path: string, ...rest: unknown[]) => {
      if (removeBeforeStat.delete(basename(String(path)))) await unlink(path); // the replay got there first
      return (fs.stat as (...a: unknown[]) => unknown)(path, ...rest);
    },
  };
});

const { UsageSpool } = await import("./spool.ts");

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

it("a segment deleted between listing and stat is simply gone from the backlog, not an error", async () => {
  dir = await mkdtemp(join(tmpdir(), "mg-spool-race-"));
  const spool = await UsageSpool.open(dir);
  await spool.appendNow([event(1), event(2)]);
  await spool.close(); // sealed: 1.jsonl
  const again = await UsageSpool.open(dir);
  await again.appendNow([event(3)]);
  await again.flush(); // 2.jsonl, being written
  const whole = await again.backlogBytes();
  expect(whole).toBeGreaterThan(0);
  removeBeforeStat.add("1.jsonl");
  const after = await again.backlogBytes();
  expect(after).toBeGreaterThan(0);
  expect(after).toBeLessThan(whole);
  await again.close();
});
