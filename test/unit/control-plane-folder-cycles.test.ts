import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../helpers/processes.ts";

// The control plane's folders (admin, auth, graphql, http, main, services, snapshot, ...) depend on each other in
// one direction: a newcomer reading one folder never has to read the folder that uses it. A cycle between two
// folders (issue 30: admin -> main -> snapshot -> main, graphql <-> http, config <-> services) means neither can
// be read alone; this test names the imports that would close one. Tests beside the code are left out: they are
// not part of the module graph the product loads.

const root = join(repoRoot, "control-plane/src");
const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["'](\.{1,2}\/[^"']+)["']/gm;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === "generated" ? [] : sources(path);
    return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [path] : [];
  });
}

/** The top folder of control-plane/src a file is in ("." for a file at the top). */
function folderOf(file: string): string {
  const rel = relative(root, file);
  return rel.includes("/") ? rel.split("/")[0]! : ".";
}

/** folder -> folder -> the imports (file -> target) that make that edge. */
function folderGraph(): Map<string, Map<string, string[]>> {
  const graph = new Map<string, Map<string, string[]>>();
  for (const file of sources(root)) {
    const from = folderOf(file);
    for (const m of readFileSync(file, "utf8").matchAll(IMPORT)) {
      const target = resolve(dirname(file), m[1]!);
      if (relative(root, target).startsWith("..")) continue;
      const to = folderOf(target);
      if (to === from) continue;
      const edges = graph.get(from) ?? new Map<string, string[]>();
      graph.set(from, edges);
      edges.set(to, [...(edges.get(to) ?? []), `${relative(root, file)} -> ${relative(root, target)}`]);
    }
  }
  return graph;
}

/** Every elementary cycle found by a depth-first walk, each once, as the imports that close it. */
function cycles(graph: Map<string, Map<string, string[]>>): string[][] {
  const found = new Map<string, string[]>();
  const walk = (path: string[]) => {
    const here = path[path.length - 1]!;
    for (const next of graph.get(here)?.keys() ?? []) {
      const at = path.indexOf(next);
      if (at >= 0) {
        const loop = path.slice(at);
        const key = [...loop].sort().join(",");
        if (!found.has(key))
          found.set(
            key,
            loop.map((f, i) => graph.get(f)!.get(loop[(i + 1) % loop.length]!)![0]!),
          );
      } else if (path.length < 8) walk([...path, next]);
    }
  };
  for (const start of graph.keys()) walk([start]);
  return [...found.values()];
}

describe("control-plane folders", () => {
  it("import each other without a cycle", () => {
    const graph = folderGraph();
    // the scan sees the imports it must (a broken pattern would find no edge and pass for nothing)
    expect(graph.get("main")?.has("snapshot")).toBe(true);
    expect(graph.get("http")?.has("graphql")).toBe(true);
    expect(cycles(graph)).toEqual([]);
  });
});
