import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

// Summarises V8 .cpuprofile files (node --cpu-prof): where the time went by package, and the functions of
// modelgate's own code with the most self time (and their inclusive time).
//   tsx test/bench/profile-summary.ts <dir with .cpuprofile files>

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

interface Loaded {
  p: Profile;
  byId: Map<number, ProfileNode>;
  parent: Map<number, number>;
  /** each sample's time (µs, one clock for every thread of a process) */
  at: number[];
}

function load(file: string): Loaded {
  const p = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  let t = p.startTime;
  const at = p.timeDeltas.map((d) => (t += d));
  return { p, byId, parent, at };
}

/** The time of the last sample with `fn` on its stack, over every file (-Infinity when none). */
function lastSampleIn(profiles: Loaded[], fn: string): number {
  let last = -Infinity;
  for (const { p, byId, parent, at } of profiles) {
    const onStack = new Map<number, boolean>();
    const has = (id: number): boolean => {
      let v = onStack.get(id);
      if (v === undefined) {
        const up = parent.get(id);
        v = byId.get(id)?.callFrame.functionName === fn || (up !== undefined && has(up));
        onStack.set(id, v);
      }
      return v;
    };
    p.samples.forEach((id, i) => {
      if (has(id) && at[i]! > last) last = at[i]!;
    });
  }
  return last;
}

const ownCode = /\/(data-plane|control-plane)\/(src|dist)\//;

function category(url: string, name: string): string {
  if (!url) return name.startsWith("(") ? name : "(native / V8 builtins)";
  if (url.startsWith("node:")) return "node internals";
  const nm = url.lastIndexOf("/node_modules/");
  if (nm !== -1) {
    const rest = url.slice(nm + 14).split("/");
    return rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const own = ownCode.exec(url);
  if (own) return `modelgate ${own[1]}`;
  return url;
}

const where = (f: CallFrame, root: string) =>
  `${f.url.replace(`file://${root}`, "").replace(/^\//, "")}:${f.lineNumber + 1}`;

/**
 * `after`: count only the samples after the last one with this function on the stack: a run of the streams
 * scenario alone otherwise mostly profiles the bench's non-streamed JIT warm-up (pass relayPassthroughJson).
 */
export function summariseProfiles(dir: string, root: string, top = 15, after?: string): string {
  const files = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"));
  if (!files.length) return `no .cpuprofile in ${dir}`;
  const self = new Map<string, { ms: number; frame: CallFrame }>();
  const inclusive = new Map<string, number>();
  const cats = new Map<string, number>();
  let total = 0;
  let idle = 0;
  const profiles = files.map((f) => load(join(dir, f)));
  // Every thread's samples after that moment (a worker thread's start-up would otherwise count).
  const cutoff = after === undefined ? -Infinity : lastSampleIn(profiles, after);
  for (const { p, byId, parent, at } of profiles) {
    const key = (f: CallFrame) => `${f.functionName || "(anonymous)"} ${f.url}:${f.lineNumber}`;
    p.samples.forEach((id, i) => {
      if (at[i]! <= cutoff) return;
      const ms = (p.timeDeltas[i] ?? 0) / 1000;
      const n = byId.get(id);
      if (!n) return;
      total += ms;
      const f = n.callFrame;
      if (f.functionName === "(idle)") {
        idle += ms;
        return;
      }
      const k = key(f);
      const s = self.get(k) ?? { ms: 0, frame: f };
      s.ms += ms;
      self.set(k, s);
      const c = category(f.url, f.functionName);
      cats.set(c, (cats.get(c) ?? 0) + ms);
      // inclusive time of modelgate's functions: each function once per sample, however deep it recurses
      const seen = new Set<string>();
      for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
        const cf = byId.get(cur)!.callFrame;
        if (!ownCode.test(cf.url)) continue;
        const ck = key(cf);
        if (seen.has(ck)) continue;
        seen.add(ck);
        inclusive.set(ck, (inclusive.get(ck) ?? 0) + ms);
      }
    });
  }
  const busy = total - idle;
  const pct = (ms: number) => `${((100 * ms) / busy).toFixed(1)}%`;
  const out: string[] = [];
  out.push(
    `CPU profile of the data plane (${files.length} file(s)${after ? `, after the last sample in ${after}` : ""}): ${(total / 1000).toFixed(1)} s sampled, ${(busy / 1000).toFixed(1)} s busy (percentages are of busy time)`,
  );
  out.push("", "Self time by package:");
  for (const [c, ms] of [...cats].sort((a, b) => b[1] - a[1]).slice(0, 12)) out.push(`  ${pct(ms).padStart(6)}  ${c}`);
  const own = [...self.entries()].filter(([, v]) => ownCode.test(v.frame.url)).sort((a, b) => b[1].ms - a[1].ms);
  const ownTotal = own.reduce((s, [, v]) => s + v.ms, 0);
  out.push("", `modelgate's own code: ${pct(ownTotal)} self time. Top functions by self time (self, inclusive):`);
  for (const [k, v] of own.slice(0, top)) {
    out.push(
      `  ${pct(v.ms).padStart(6)}  ${pct(inclusive.get(k) ?? 0).padStart(6)}  ${v.frame.functionName || "(anonymous)"}  ${where(v.frame, root)}`,
    );
  }
  out.push("", "Top functions overall by self time:");
  for (const [, v] of [...self.entries()].sort((a, b) => b[1].ms - a[1].ms).slice(0, top)) {
    out.push(
      `  ${pct(v.ms).padStart(6)}  ${v.frame.functionName || "(anonymous)"}  ${v.frame.url ? where(v.frame, root) : ""}  [${category(v.frame.url, v.frame.functionName)}]`,
    );
  }
  out.push("", "modelgate functions by inclusive time:");
  for (const [k, ms] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    const fr = self.get(k)?.frame;
    out.push(
      `  ${pct(ms).padStart(6)}  ${k.split(" ")[0]}  ${fr ? where(fr, root) : k.split(" ").slice(1).join(" ").replace(`file://${root}`, "")}`,
    );
  }
  return out.join("\n");
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [dir, flag, after] = process.argv.slice(2);
  if (!dir || (flag !== undefined && (flag !== "--after" || !after))) {
    console.error("usage: tsx test/bench/profile-summary.ts <dir with .cpuprofile files> [--after <function>]");
    process.exit(2);
  }
  console.log(summariseProfiles(dir, fileURLToPath(new URL("../..", import.meta.url)), 15, after));
}
