import {
  chmodSync,
  closeSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";

// The embedded data directory holds the database (PGlite), the master key and the admin token. PGlite is
// single-process: two processes on one directory lose writes and can corrupt it. So:
//   - it is private to the user running modelgate: the directory 0700, its files 0600 (umask 077 at start;
//     a directory left looser by an earlier version is tightened at start, and the log says so);
//   - one process at a time holds it, through `modelgate.lock` (created O_EXCL, holding the holder's pid;
//     a lock whose pid is no longer alive is stale and taken over);
//   - the server says where it listens in `server.json`, so the admin CLI pointed at the directory finds it
//     rather than guessing a port (and sending the admin token to whatever answers there).

export const LOCK_FILE = "modelgate.lock";
export const ADVERT_FILE = "server.json";

export interface LockInfo {
  pid: number;
  /** "server" (npm start) or "cli" (the admin CLI working on the database directly) */
  holder: "server" | "cli";
  since: string;
}

export interface Advert {
  pid: number;
  url: string;
}

/**
 * Makes the directory private: umask 077 for everything this process creates from now on, the directory
 * created 0700, and anything in it readable or writable by others tightened. Returns how many entries were
 * tightened (0 on a fresh or already private directory).
 */
export function secureDataDir(dir: string): number {
  process.umask(0o077);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return tighten(dir);
}

/**
 * Makes everything under the directory private again. PGlite (Postgres compiled to WASM) sets its files'
 * modes itself, past the umask, so the embedded server runs this once the database is open.
 */
export function tighten(path: string): number {
  const st = lstatSync(path);
  if (st.isSymbolicLink()) return 0;
  let n = 0;
  if ((st.mode & 0o077) !== 0) {
    chmodSync(path, st.isDirectory() ? 0o700 : 0o600);
    n++;
  }
  if (st.isDirectory()) for (const name of readdirSync(path)) n += tighten(join(path, name));
  return n;
}

const alive = (pid: number): boolean => {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM"; // alive, another user's
  }
};

/** The lock's holder when a live process holds the directory; null when free (or the holder died). */
export function lockHolder(dir: string): LockInfo | null {
  let info: LockInfo;
  try {
    info = JSON.parse(readFileSync(join(dir, LOCK_FILE), "utf8")) as LockInfo;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    // A lock file being written this instant reads empty: count it as held rather than open the database.
    return { pid: -1, holder: "server", since: "" };
  }
  return Number.isSafeInteger(info.pid) && alive(info.pid) ? info : null;
}

export class DataDirLocked extends Error {
  constructor(
    readonly dir: string,
    readonly holder: LockInfo,
  ) {
    super(
      holder.holder === "cli"
        ? `${dir} is in use by the admin CLI (pid ${holder.pid}); try again when it has finished.`
        : `${dir} is held by a running modelgate server (pid ${holder.pid}). Stop that server first, or point this one at another directory with MODELGATE_DATA_DIR.`,
    );
  }
}

/**
 * Takes the directory for this process, or throws DataDirLocked naming the live holder. The lock goes when
 * the process exits (release() does it earlier); a process killed outright leaves a stale lock, which the
 * next one takes over because its pid is gone.
 */
export function lockDataDir(dir: string, holder: LockInfo["holder"]): { release(): void } {
  const path = join(dir, LOCK_FILE);
  const mine: LockInfo = { pid: process.pid, holder, since: new Date().toISOString() };
  for (let attempt = 0; ; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, "wx", 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST" || attempt >= 2) throw err;
      const current = lockHolder(dir);
      if (current) throw new DataDirLocked(dir, current);
      // Stale: its process is gone. Renaming it away first means two processes racing for a stale lock
      // cannot both delete it and each create a fresh one; only one rename wins.
      try {
        const aside = `${path}.stale-${process.pid}`;
        renameSync(path, aside);
        unlinkSync(aside);
      } catch {
        /* another process took it over first; try again */
      }
      continue;
    }
    writeSync(fd, JSON.stringify(mine));
    closeSync(fd);
    break;
  }
  let held = true;
  const release = () => {
    if (!held) return;
    held = false;
    removeIfMine(join(dir, ADVERT_FILE));
    removeIfMine(path);
  };
  process.once("exit", release);
  return { release };
}

function removeIfMine(path: string): void {
  try {
    if ((JSON.parse(readFileSync(path, "utf8")) as { pid: number }).pid === process.pid) unlinkSync(path);
  } catch {
    /* already gone */
  }
}

/** Writes where the server listens (0600), after it listens. */
export function advertise(dir: string, url: string): void {
  const advert: Advert = { pid: process.pid, url };
  const tmp = join(dir, `${ADVERT_FILE}.tmp`);
  writeFileSync(tmp, JSON.stringify(advert), { mode: 0o600 });
  renameSync(tmp, join(dir, ADVERT_FILE));
}

export function readAdvert(dir: string): Advert | null {
  try {
    const a = JSON.parse(readFileSync(join(dir, ADVERT_FILE), "utf8")) as Advert;
    return typeof a.url === "string" && Number.isSafeInteger(a.pid) ? a : null;
  } catch {
    return null;
  }
}

/** The URL a local client reaches a server on, from the address it listens on. */
export function localUrl(address: string, port: number): string {
  if (address === "0.0.0.0" || address === "") return `http://127.0.0.1:${port}`;
  if (address === "::") return `http://[::1]:${port}`;
  return address.includes(":") ? `http://[${address}]:${port}` : `http://${address}:${port}`;
}
