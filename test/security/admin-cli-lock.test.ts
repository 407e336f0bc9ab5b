import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, freePort, type Proc, startTs, waitForHttp } from "../helpers/processes.ts";

// Issue 12, item 3: with the server on a non-default PORT, the admin CLI run without PORT found nothing on
// 8080, opened ./data next to the running server and reported success; the writes were lost. Now the server
// holds the directory (modelgate.lock) and says where it listens (server.json, 0600); the CLI finds it from
// the directory, never opens a directory a live process holds, and never sends the token to a guessed port.

let dataDir: string;
let server: Proc;
let base: string;
let decoy: Server;
let decoyPort: number;
const decoyHits: string[] = [];
let cliEnv: NodeJS.ProcessEnv;

const serverAdmin = async (command: string, args: Record<string, unknown>) => {
  const token = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
  const res = await fetch(`${base}/api/admin`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ command, args }),
  });
  return { status: res.status, body: (await res.json()) as { result?: Record<string, unknown>; error?: string } };
};

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "mg-lock-"));
  // Something else answers on the port the CLI would have guessed: it must never see a request (or the token).
  decoy = createServer((req, res) => {
    decoyHits.push(`${req.method} ${req.url} ${req.headers.authorization ?? ""}`);
    res.writeHead(200, { "content-type": "application/json" }).end('{"result":{"name":"fake"}}');
  });
  decoyPort = await new Promise<number>((r) =>
    decoy.listen(0, "127.0.0.1", () => r((decoy.address() as { port: number }).port)),
  );
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  server = startTs("control-plane/src/main/embedded.ts", {
    PORT: String(port),
    MODELGATE_DATA_DIR: dataDir,
    DATABASE_URL: "",
    REDIS_URL: "",
    GATEWAY_CONFIG: "",
  });
  await waitForHttp(`${base}/healthz`, server, 120_000);
  // The CLI's environment: the same data directory, and PORT pointing at the decoy (as a shell might have it).
  cliEnv = {
    MODELGATE_DATA_DIR: dataDir,
    PORT: String(decoyPort),
    DATABASE_URL: "",
    REDIS_URL: "",
    MODELGATE_URL: "",
    MODELGATE_ADMIN_TOKEN: "",
  };
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await new Promise((r) => decoy?.close(r));
  rmSync(dataDir, { recursive: true, force: true });
});

describe("the admin CLI and the data directory's owner", () => {
  it("the server advertises where it listens, in a private file, and holds the lock", () => {
    const advert = JSON.parse(readFileSync(join(dataDir, "server.json"), "utf8")) as { url: string; pid: number };
    expect(advert).toEqual({ url: base, pid: server.child.pid });
    expect(statSync(join(dataDir, "server.json")).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(join(dataDir, "modelgate.lock"), "utf8"))).toMatchObject({
      pid: server.child.pid,
      holder: "server",
    });
  });

  it("writes made through the CLI land on the running server (non-default PORT, CLI without it)", async () => {
    const created = await admin(cliEnv, "account", "create", "--name", "acme", "--balance", "5");
    expect(created.code, created.stderr).toBe(0);
    const topup = await admin(cliEnv, "account", "topup", "--account", "acme", "--amount", "1000");
    expect(topup.code, topup.stderr).toBe(0);
    const key = await admin(cliEnv, "key", "create", "--account", "acme", "--name", "k1");
    expect(key.code, key.stderr).toBe(0);
    // Seen by the server itself: the same process that serves the API has them.
    const shown = await serverAdmin("account show", { account: "acme" });
    expect(shown.status).toBe(200);
    expect(shown.body.result).toMatchObject({ name: "acme", balanceMicro: "1005000000" });
    const keys = await serverAdmin("key list", { account: "acme" });
    expect((keys.body.result as unknown as { name: string }[]).map((k) => k.name)).toEqual(["k1"]);
    expect(decoyHits).toEqual([]);
  });

  it("a second server on the same directory refuses to start and says why", async () => {
    const second = startTs("control-plane/src/main/embedded.ts", {
      PORT: String(await freePort()),
      MODELGATE_DATA_DIR: dataDir,
      DATABASE_URL: "",
      REDIS_URL: "",
      GATEWAY_CONFIG: "",
    });
    const code = await new Promise<number | null>((r) => second.child.once("exit", r));
    expect(code).toBe(2);
    expect(second.output()).toContain(`held by a running modelgate server (pid ${server.child.pid})`);
  });

  it("a directory held by a live process that has not advertised is refused, never opened", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mg-lock-held-"));
    try {
      // This test process stands in for a server that is still starting.
      writeFileSync(
        join(dir, "modelgate.lock"),
        JSON.stringify({ pid: process.pid, holder: "server", since: new Date().toISOString() }),
      );
      const r = await admin({ ...cliEnv, MODELGATE_DATA_DIR: dir }, "account", "create", "--name", "lost");
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`A modelgate server (pid ${process.pid}) holds ${dir}`);
      expect(r.stderr).toContain("Try again in a moment");
      expect(existsSync(join(dir, "pglite"))).toBe(false);
      expect(decoyHits).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("after the server stops, the CLI opens the directory itself and finds what was written through the server", async () => {
    expect(await server.stop()).toBe(0);
    expect(existsSync(join(dataDir, "modelgate.lock"))).toBe(false);
    expect(existsSync(join(dataDir, "server.json"))).toBe(false);
    const shown = await admin(cliEnv, "account", "show", "--account", "acme");
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.json).toMatchObject({ name: "acme", balanceMicro: "1005000000" });
    expect(existsSync(join(dataDir, "modelgate.lock"))).toBe(false);
  });

  it("a lock left by a killed process is stale and taken over", async () => {
    const dead = startTs("control-plane/src/settings/data-dir.ts", {});
    const deadPid = dead.child.pid!;
    await dead.stop("SIGKILL");
    writeFileSync(
      join(dataDir, "modelgate.lock"),
      JSON.stringify({ pid: deadPid, holder: "server", since: new Date().toISOString() }),
    );
    const shown = await admin(cliEnv, "account", "show", "--account", "acme");
    expect(shown.code, shown.stderr).toBe(0);
    expect(decoyHits).toEqual([]);
  });
});
