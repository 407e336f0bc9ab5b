import { type ChildProcess, spawn, type StdioOptions } from "node:child_process";
import { closeSync, openSync, readdirSync, readFileSync } from "node:fs";
import { repoRoot } from "../helpers/processes.ts";

// Child processes of the bench (every one is tracked and killed on exit, also on failure) and their CPU time
// and memory, read from /proc.

export interface BenchProc {
  name: string;
  child: ChildProcess;
  pid: number;
  /** stdout + stderr, kept only when not sent to a log file (last 64 KiB) */
  output(): string;
  stop(timeoutMs?: number): Promise<void>;
}

const children = new Set<BenchProc>();

export interface SpawnOptions {
  env?: NodeJS.ProcessEnv;
  /** append stdout and stderr to this file instead of keeping them in memory */
  logFile?: string;
  ipc?: boolean;
  /** node flags before the entry point (default: --import tsx) */
  nodeArgs?: string[];
}

export function spawnNode(name: string, entry: string, args: string[], opts: SpawnOptions = {}): BenchProc {
  const fd = opts.logFile ? openSync(opts.logFile, "a") : null;
  const out: StdioOptions = fd !== null ? ["ignore", fd, fd] : ["ignore", "pipe", "pipe"];
  const child = spawn(
    process.execPath,
    [...(opts.nodeArgs ?? ["--import", "tsx", "--conditions=modelgate-source"]), entry, ...args],
    {
      cwd: repoRoot,
      env: { ...process.env, ...opts.env },
      stdio: opts.ipc ? ([...(out as unknown[]), "ipc"] as StdioOptions) : out,
      // structured clone over IPC: latencies of unfinished requests are Infinity, which JSON would turn into null
      serialization: opts.ipc ? "advanced" : "json",
    },
  );
  if (fd !== null) closeSync(fd);
  let text = "";
  const keep = (d: Buffer) => {
    text += d.toString();
    if (text.length > 65_536) text = text.slice(-65_536);
  };
  child.stdout?.on("data", keep);
  child.stderr?.on("data", keep);
  if (child.pid === undefined) throw new Error(`could not start ${name}`);
  const proc: BenchProc = {
    name,
    child,
    pid: child.pid,
    output: () => text,
    stop: (timeoutMs = 10_000) =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) {
          children.delete(proc);
          return resolve();
        }
        const kill = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
        child.once("exit", () => {
          clearTimeout(kill);
          children.delete(proc);
          resolve();
        });
        child.kill("SIGTERM");
      }),
  };
  children.add(proc);
  return proc;
}

export const childPids = (): number[] => [...children].map((p) => p.pid);

/** CPU time the whole machine spent busy so far (all cores), in milliseconds, from /proc/stat. */
export function machineBusyMs(): number {
  const cpu = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal
  const busy = cpu[0]! + cpu[1]! + cpu[2]! + (cpu[5] ?? 0) + (cpu[6] ?? 0) + (cpu[7] ?? 0);
  return (busy * 1000) / ticksPerSecond;
}

/** Stops every child still running, newest first. */
export async function stopAll(): Promise<void> {
  for (const p of [...children].reverse()) await p.stop(5_000);
}

// Last resort if the harness dies without running its cleanup.
process.on("exit", () => {
  for (const p of children) if (p.child.exitCode === null) p.child.kill("SIGKILL");
});

export async function waitForUrl(
  url: string,
  proc: BenchProc | null,
  timeoutMs = 60_000,
  init?: RequestInit,
): Promise<void> {
  const until = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < until) {
    if (proc && proc.child.exitCode !== null)
      throw new Error(`${proc.name} exited (${proc.child.exitCode}):\n${proc.output()}`);
    try {
      const res = await fetch(url, init);
      await res.arrayBuffer();
      if (res.ok) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = String(err);
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`timed out waiting for ${url} (${last})${proc ? `:\n${proc.output()}` : ""}`);
}

const ticksPerSecond = 100; // USER_HZ on Linux

/** User + system CPU time of a process so far, in milliseconds (0 if it is gone). */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // fields[0] is field 3 (state): utime is field 14, stime field 15
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
  } catch {
    return 0;
  }
}

export const cpuMsOf = (pids: number[]): number => pids.reduce((s, p) => s + cpuMs(p), 0);

/**
 * Read and write system calls of processes so far (/proc/<pid>/io: syscr counts read(2)-like calls, syscw
 * write(2)-like ones, writev included; 0 for a process that is gone). Each is a kernel entry, which costs far
 * more on this kind of virtual machine than the bytes it moves.
 */
export function syscallsOf(pids: number[]): { reads: number; writes: number } {
  let reads = 0;
  let writes = 0;
  for (const pid of pids) {
    try {
      const io = readFileSync(`/proc/${pid}/io`, "utf8");
      reads += Number(/^syscr: (\d+)/m.exec(io)?.[1] ?? 0);
      writes += Number(/^syscw: (\d+)/m.exec(io)?.[1] ?? 0);
    } catch {
      // gone
    }
  }
  return { reads, writes };
}

/** VmRSS and VmHWM (peak RSS) in MB. */
export function memoryMb(pid: number): { rss: number; peak: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
    return { rss: kb("VmRSS") / 1024, peak: kb("VmHWM") / 1024 };
  } catch {
    return { rss: NaN, peak: NaN };
  }
}

/**
 * Waits until the processes are idle (under 5% of a core over 500 ms), at most `maxMs`: the control plane
 * settles usage after the load stops, and that work must neither bleed into the next target's run nor go
 * uncounted. Returns how long it took.
 */
export async function waitIdle(pids: number[], maxMs: number): Promise<number> {
  const t0 = Date.now();
  while (Date.now() - t0 < maxMs) {
    const before = cpuMsOf(pids);
    await new Promise((r) => setTimeout(r, 500));
    if (cpuMsOf(pids) - before < 25) break;
  }
  return Date.now() - t0;
}

/** Live child processes of `ppid` (a cluster primary's workers), from /proc. */
export function childrenOf(ppid: number): number[] {
  const out: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === ppid) out.push(Number(d));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}
