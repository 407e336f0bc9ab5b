import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { DOC, type Proof, namedProofs, render } from "../../scripts/compat-matrix.ts";
import { type Cell, cellsOf } from "../helpers/compat.ts";
import { repoRoot } from "../helpers/processes.ts";

// docs/compatibility.md is generated from a test run; this keeps it from rotting between runs: the tests it
// names are exactly the tagged tests the test files hold today (collected by `vitest list`, which runs no test),
// and its tables and totals are what its own list of tests gives.

const run = promisify(execFile);

/** Test files that tag themselves (compat(...) in their source). */
function taggedFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".test.ts"))
    .map((e) => join(e.parentPath, e.name))
    .filter((f) => /\bcompat\(/.test(readFileSync(f, "utf8")));
}

describe("docs/compatibility.md", () => {
  const doc = readFileSync(DOC, "utf8");

  it("names exactly the tagged tests the test files hold, with their cells", { timeout: 180_000 }, async () => {
    const files = taggedFiles(join(repoRoot, "test")).filter((f) => !f.endsWith("compatibility-doc.test.ts"));
    expect(files.length).toBeGreaterThan(0);
    const out = mkdtempSync(join(tmpdir(), "mg-compat-"));
    try {
      const listing = join(out, "list.json");
      // A child vitest must not think it is a worker of this one.
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST")));
      await run("npx", ["vitest", "list", `--json=${listing}`, ...files.map((f) => relative(repoRoot, f))], {
        cwd: repoRoot,
        env,
        maxBuffer: 16 * 1024 * 1024,
      });
      const tests = JSON.parse(readFileSync(listing, "utf8")) as { name: string; file: string }[];
      const tagged = tests
        .flatMap((t) => cellsOf(t.name).map((cell) => `${cell} ${relative(repoRoot, t.file)} › ${t.name}`))
        .sort();
      expect(tagged.length).toBeGreaterThan(0);
      expect([...namedProofs(doc)].sort()).toEqual(tagged);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });

  it("has the tables, totals and red cells its list of tests gives", () => {
    const proofs: Proof[] = [...doc.matchAll(/^- `([^`]+)` (✅|❌) `([^`]+)` › (.*)$/gm)].map((m) => ({
      cell: m[1] as Cell,
      passed: m[2] === "✅",
      file: m[3]!,
      name: m[4]!,
    }));
    expect(render(proofs)).toBe(doc);
  });
});
