import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { NUMERIC_SETTINGS, checkNumericSettings } from "../../data-plane/src/env.ts";
import { startTs } from "../helpers/processes.ts";

// Issue 25, item 14: MODELGATE_RESPONSES_TTL_S=abc made every stored call a 500 in distributed mode (billed all
// the same) and records that never expired in embedded mode: numeric settings were read with Number() and NaN
// ran silently. Every numeric variable is now checked when a process starts, and a bad value stops it with a
// message naming the variable and what it accepts.

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Starts `entry` with `env` and waits for it to exit; its exit code and output. */
async function exitOf(entry: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), "mg-env-"));
  dirs.push(dataDir);
  const proc = startTs(entry, { MODELGATE_DATA_DIR: dataDir, PORT: "0", DATABASE_URL: "", REDIS_URL: "", ...env });
  const code = await new Promise<number | null>((resolve) => {
    if (proc.child.exitCode !== null) resolve(proc.child.exitCode);
    proc.child.once("exit", (c) => resolve(c));
  });
  return { code, output: proc.output() };
}

it("the embedded server refuses to start on MODELGATE_RESPONSES_TTL_S=abc, naming the variable", async () => {
  const { code, output } = await exitOf("control-plane/src/main/embedded.ts", {
    MODELGATE_RESPONSES_STORE: "1",
    MODELGATE_RESPONSES_TTL_S: "abc",
  });
  expect(code).not.toBe(0);
  expect(output).toContain("MODELGATE_RESPONSES_TTL_S must be a whole number of seconds, at least 1, not 'abc'");
}, 120_000);

it("the embedded server refuses a bad control-plane setting too", async () => {
  const { code, output } = await exitOf("control-plane/src/main/embedded.ts", { MODELGATE_GRAPHQL_MAX_DEPTH: "ten" });
  expect(code).not.toBe(0);
  expect(output).toContain("MODELGATE_GRAPHQL_MAX_DEPTH must be a whole number of levels, at least 1, not 'ten'");
}, 120_000);

it("every numeric setting refuses what it does not accept, and takes what it does", () => {
  for (const s of NUMERIC_SETTINGS) {
    const plane = s.planes[0]!;
    const bad = ["abc", "12abc", "NaN", "Infinity", String(s.min - 1), ...(s.decimal ? [] : ["1.5", "1e3"])];
    if (s.max !== undefined) bad.push(String(s.max + 1));
    for (const value of bad) {
      expect(() => checkNumericSettings({ [s.name]: value }, plane), `${s.name}=${value}`).toThrow(
        new RegExp(`^${s.name} must be .* not '${value.replace(/[.+]/g, "\\$&")}'$`),
      );
    }
    expect(() => checkNumericSettings({ [s.name]: String(s.max ?? s.min + 1) }, plane), s.name).not.toThrow();
    expect(() => checkNumericSettings({ [s.name]: "" }, plane), s.name).not.toThrow();
  }
});
