import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

export const repoRoot = fileURLToPath(new URL("../..", import.meta.url));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface Proc {
  child: ChildProcess;
  output: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts a TypeScript entry point of the repo the way the npm scripts do (node + tsx). `prefix` runs it
 * under another program that execs it in turn (e.g. `ip netns exec <ns>`), so the pid is still node's.
 */
export function startTs(entry: string, env: NodeJS.ProcessEnv, args: string[] = [], prefix: string[] = []): Proc {
  const argv = [process.execPath, "--import", "tsx", "--conditions=modelgate-source", entry, ...args];
  const [command, ...rest] = [...prefix, ...argv] as [string, ...string[]];
  const child = spawn(command, rest, {
    cwd: repoRoot,
    env: { ...process.env, LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  return {
    child,
    output: () => out,
    stop: (signal = "SIGTERM") =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once("exit", (code) => resolve(code));
        child.kill(signal);
      }),
  };
}

/** Polls a URL until it answers 200, or fails with the process output. */
export async function waitForHttp(
  url: string,
  proc: Proc,
  timeoutMs = 60_000,
  headers: Record<string, string> = {},
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (proc.child.exitCode !== null) throw new Error(`process exited (${proc.child.exitCode}):\n${proc.output()}`);
    try {
      const res = await fetch(url, { headers });
      if (res.ok) return;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`timed out waiting for ${url}:\n${proc.output()}`);
}

/** Runs a command to its exit, with stdout and stderr kept apart (what a script piping its stdout sees). */
export async function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(command, args, {
    cwd: repoRoot,
    env: { ...process.env, LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const code = await new Promise<number>((r) => child.on("exit", (c) => r(c ?? 1)));
  return { code, stdout, stderr };
}

/** Runs the admin CLI as `npm run admin` does and returns its parsed --json output. */
export async function admin(
  env: NodeJS.ProcessEnv,
  ...args: string[]
): Promise<{ code: number; json: unknown; stdout: string; stderr: string }> {
  const r = await run(
    process.execPath,
    ["--import", "tsx", "--conditions=modelgate-source", "control-plane/src/admin/cli.ts", ...args, "--json"],
    env,
  );
  let json: unknown = null;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    /* not JSON: usage errors print text */
  }
  return { ...r, json };
}

export async function eventually<T>(
  fn: () => Promise<T>,
  check: (v: T) => boolean,
  timeoutMs = 10_000,
  stepMs = 100,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: T = await fn();
  while (!check(last)) {
    if (Date.now() > until)
      throw new Error(
        `condition not met in ${timeoutMs} ms; last value: ${JSON.stringify(last, (_k, v) => (typeof v === "bigint" ? v.toString() : v))}`,
      );
    await new Promise((r) => setTimeout(r, stepMs));
    last = await fn();
  }
  return last;
}
