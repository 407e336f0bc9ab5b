import {
  chmodSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort, type Proc, startTs, waitForHttp } from "../helpers/processes.ts";

// Issue 12, item 6: the data directory was 0755 and most PGlite files 0666, so a local user could read
// password hashes and e-mails out of the WAL and write it. Now the directory is 0700 and its files 0600:
// the server sets umask 077 at start, and tightens a directory left looser by an earlier version (and says
// so in the log).

let root: string;
let dataDir: string;
let server: Proc;
let base: string;

/** Every entry under `dir` whose mode lets group or others in. */
function loose(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = lstatSync(p);
    if (st.isSymbolicLink()) continue;
    if ((st.mode & 0o077) !== 0) out.push(`${p} ${(st.mode & 0o777).toString(8)}`);
    if (st.isDirectory()) out.push(...loose(p));
  }
  return out;
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "mg-perm-"));
  dataDir = join(root, "data");
  // What an earlier version left behind: a world-readable directory and world-writable files.
  mkdirSync(join(dataDir, "outbox"), { recursive: true });
  writeFileSync(join(dataDir, "outbox", "old-mail.eml"), "x");
  writeFileSync(join(dataDir, "stale.log"), "x");
  chmodSync(join(dataDir, "outbox", "old-mail.eml"), 0o666);
  chmodSync(join(dataDir, "stale.log"), 0o644);
  chmodSync(join(dataDir, "outbox"), 0o777);
  chmodSync(dataDir, 0o755);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  server = startTs("control-plane/src/main/embedded.ts", {
    PORT: String(port),
    MODELGATE_DATA_DIR: dataDir,
    DATABASE_URL: "",
    REDIS_URL: "",
    GATEWAY_CONFIG: "",
    LOG_LEVEL: "info",
  });
  await waitForHttp(`${base}/healthz`, server, 120_000);
}, 180_000);

afterAll(async () => {
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

it("the data directory is 0700 and nothing in it is open to group or others, the database files included", async () => {
  // A write through the running server, so the database has written its WAL.
  const token = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
  const res = await fetch(`${base}/api/admin`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ command: "account create", args: { name: "perm", email: "ops@perm.test" } }),
  });
  expect(res.status).toBe(200);
  expect(lstatSync(dataDir).mode & 0o777).toBe(0o700);
  const files = readdirSync(dataDir, { recursive: true });
  expect(files.length).toBeGreaterThan(100); // PGlite's files are there, and were checked
  expect(loose(dataDir)).toEqual([]);
});

it("the tightening of a directory left looser is logged", () => {
  const line = server
    .output()
    .split("\n")
    .find((l) => l.includes("made it private"));
  expect(line).toBeDefined();
  expect(JSON.parse(line!)).toMatchObject({ dataDir, entries: 4 });
});
