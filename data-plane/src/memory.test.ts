import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { applyHeapFlags, heapFlags } from "./memory.ts";

describe("heap flags", () => {
  it("bounds the old generation's growth as MODELGATE_HEAP_GROWING_PERCENT says; unset or 0 leaves it to V8", () => {
    expect(heapFlags({ MODELGATE_HEAP_GROWING_PERCENT: "50" })).toEqual(["--heap-growing-percent=50"]);
    expect(heapFlags({ MODELGATE_HEAP_GROWING_PERCENT: "100" })).toEqual(["--heap-growing-percent=100"]);
    expect(heapFlags({})).toEqual([]);
    expect(heapFlags({ MODELGATE_HEAP_GROWING_PERCENT: "" })).toEqual([]);
    expect(heapFlags({ MODELGATE_HEAP_GROWING_PERCENT: "0" })).toEqual([]);
  });

  it("refuses a value that is not a percentage", () => {
    for (const bad of ["-1", "1.5", "lots", "1001"])
      expect(() => heapFlags({ MODELGATE_HEAP_GROWING_PERCENT: bad })).toThrow(/MODELGATE_HEAP_GROWING_PERCENT/);
  });

  it("sets the flags, unless the command line gave the same flag", () => {
    const env = { MODELGATE_HEAP_GROWING_PERCENT: "50" };
    const set: string[] = [];
    expect(applyHeapFlags(env, (f) => set.push(f), [])).toEqual(["--heap-growing-percent=50"]);
    expect(set).toEqual(["--heap-growing-percent=50"]);
    set.length = 0;
    expect(applyHeapFlags(env, (f) => set.push(f), ["--heap_growing_percent=80"])).toEqual([]);
    expect(applyHeapFlags({}, (f) => set.push(f), [])).toEqual([]);
    expect(set).toEqual([]);
  });

  // The flag set at run time takes effect: a workload whose objects survive two young collections and then die
  // (what calls in flight under load do) grows the old space far less than with V8's own factor.
  it("keeps promoted garbage from piling up in the old space", async () => {
    const peakOldSpaceMb = async (percent: string) => {
      const memory = fileURLToPath(new URL("./memory.ts", import.meta.url));
      const script = `
        import { getHeapSpaceStatistics } from "node:v8";
        import { applyHeapFlags } from ${JSON.stringify(memory)};
        applyHeapFlags();
        const live = []; for (let i = 0; i < 200_000; i++) live.push({ i, s: "x" + i });
        const ring = new Array(400_000); let peak = 0;
        for (let k = 0; k < 3_000_000; k++) {
          ring[k % 400_000] = { k, a: [k, k + 1], s: "y" + k };
          if (k % 10_000 === 0)
            peak = Math.max(peak, getHeapSpaceStatistics().find((s) => s.space_name === "old_space").space_size);
        }
        console.log(peak / 1048576, live.length);`;
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ["--import", "tsx", "--input-type=module", "-e", script],
        { env: { ...process.env, MODELGATE_HEAP_GROWING_PERCENT: percent } },
      );
      return Number(stdout.split(" ")[0]);
    };
    const [v8Own, bounded] = await Promise.all([peakOldSpaceMb("0"), peakOldSpaceMb("50")]);
    expect(bounded).toBeLessThan(v8Own * 0.75);
  }, 30_000);
});
