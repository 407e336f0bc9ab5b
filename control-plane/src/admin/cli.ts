import { parseArgs } from "node:util";
import { z } from "zod";
import { commandNames, commandOf, runAdminCommand, UsageError, type CommandName } from "./commands.ts";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { DataDirLocked, lockDataDir, lockHolder, readAdvert, tighten } from "../settings/data-dir.ts";
import { adminTokenPath, readAdminToken } from "./token.ts";

const commandHelp = commandNames
  .map((name) => {
    const c = commandOf(name);
    const lines = [`  ${name.padEnd(18)} ${c.usage}`];
    if (c.note) lines.push(`${" ".repeat(21)}(${c.note})`);
    return lines.join("\n");
  })
  .join("\n");

const HELP = `modelgate-admin: operator commands

${commandHelp}

Add --json for machine-readable output (stdout carries the output only). Amounts are decimal currency units
(10 = 10.000000). Distributed mode (DATABASE_URL set): works on the database and asks the control plane,
through REDIS_URL, to publish the change to the data planes. Embedded mode: --data-dir DIR (or
MODELGATE_DATA_DIR; default ./data) names the server's data directory. While a server holds it, the CLI talks
to that server at the address it advertised there (or MODELGATE_URL), with the admin token kept there; with no
server, the CLI opens the directory itself. It never opens a directory a live process holds.`;

/** The fields a command's argument schema names (objects, their intersections and refinements). */
function fieldsOf(schema: z.ZodType): Record<string, z.ZodType> {
  if (schema instanceof z.ZodObject) return schema.shape as Record<string, z.ZodType>;
  if (schema instanceof z.ZodIntersection)
    return { ...fieldsOf(schema._zod.def.left as z.ZodType), ...fieldsOf(schema._zod.def.right as z.ZodType) };
  return {};
}

/** Every command's options, for node's strict argv parser: a flag where the schema takes a boolean. */
const commandOptions = Object.fromEntries(
  commandNames.flatMap((name) =>
    Object.entries(fieldsOf(commandOf(name).args))
      .filter(([field]) => field !== commandOf(name).positional)
      .map(([field, schema]) => [field, { type: schema.safeParse(true).success ? "boolean" : "string" } as const]),
  ),
);

export function parseCli(argv: string[]): {
  command: CommandName;
  args: Record<string, unknown>;
  json: boolean;
  dataDir?: string;
} {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      ...commandOptions,
      json: { type: "boolean" },
      "data-dir": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help || positionals.length < 2) throw new UsageError(HELP);
  // Most commands are two words (`key create`); a group of a group's has three (`upstream key enable`).
  const three = positionals.slice(0, 3).join(" ") as CommandName;
  const words = positionals.length >= 3 && commandNames.includes(three) ? 3 : 2;
  const command = positionals.slice(0, words).join(" ") as CommandName;
  if (!commandNames.includes(command)) throw new UsageError(`unknown command '${command}'\n\n${HELP}`);
  const { json, help: _help, "data-dir": dataDir, ...args } = values;
  const pos = commandOf(command).positional;
  const rest = positionals.slice(words);
  if (pos) {
    if (rest.length !== 1) throw new UsageError(`'${command}' takes exactly one ${pos.toUpperCase()}`);
    (args as Record<string, unknown>)[pos] = rest[0];
  } else if (rest.length) throw new UsageError(`unexpected argument '${rest[0]}'`);
  return { command, args, json: json === true, dataDir: dataDir as string | undefined };
}

/**
 * Where the running server for this data directory listens: MODELGATE_URL when the operator says so, else
 * the address the server advertised in the directory. No server holding the directory: null, and the CLI
 * may open it itself. Never a guessed port: the admin token goes only where the directory says.
 */
function serverFor(dataDir: string): { url: string; pid: number | null } | null {
  if (process.env.MODELGATE_URL) return { url: process.env.MODELGATE_URL, pid: null };
  const holder = lockHolder(dataDir);
  if (holder === null) return null;
  if (holder.holder === "cli") throw new UsageError(new DataDirLocked(dataDir, holder).message);
  const advert = readAdvert(dataDir);
  if (advert === null || advert.pid !== holder.pid) {
    throw new UsageError(
      `A modelgate server (pid ${holder.pid}) holds ${dataDir} but has not said where it listens yet (it may still be starting). ` +
        "Try again in a moment, or set MODELGATE_URL to its address.",
    );
  }
  return { url: advert.url, pid: advert.pid };
}

async function viaServer(
  dataDir: string,
  server: { url: string; pid: number | null },
  command: CommandName,
  args: Record<string, unknown>,
): Promise<unknown> {
  const token = process.env.MODELGATE_ADMIN_TOKEN || readAdminToken(dataDir);
  if (!token)
    throw new UsageError(`No admin token: ${adminTokenPath(dataDir)} is missing and MODELGATE_ADMIN_TOKEN is not set.`);
  let res: Response;
  try {
    res = await fetch(`${server.url}/api/admin`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ command, args }),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    // The directory is held, so opening it here is not an option: say what to do instead.
    throw new UsageError(
      `Cannot reach the modelgate server${server.pid === null ? "" : ` (pid ${server.pid})`} at ${server.url}: ${(err as Error).message}. ` +
        `It holds ${dataDir}, so the CLI will not open the database itself: check that it is running, or stop it and run the command again.`,
    );
  }
  const body = (await res.json().catch(() => ({}))) as { result?: unknown; error?: string };
  if (!res.ok) throw new UsageError(body.error ?? `server answered ${res.status}`);
  return body.result;
}

async function direct(command: CommandName, args: Record<string, unknown>, dataDir: string): Promise<unknown> {
  const [{ openDatabase }, { migrate }, { readSettings }] = await Promise.all([
    import("../db/client.ts"),
    import("../db/migrate.ts"),
    import("../settings/settings.ts"),
  ]);
  const settings = readSettings({ ...process.env, MODELGATE_DATA_DIR: dataDir }, 8080);
  // Embedded database: hold the directory while working on it, so a server starting now waits its turn
  // (it refuses to start) instead of opening the same files.
  const lock = settings.databaseUrl ? null : lockDataDir(settings.dataDir, "cli");
  const db = await openDatabase({ databaseUrl: settings.databaseUrl, dataDir: settings.dataDir }).catch((err) => {
    lock?.release();
    throw err;
  });
  let changed = false;
  try {
    await migrate(db.sql);
    const result = await runAdminCommand(
      {
        prisma: db.prisma,
        masterKey: settings.masterKey,
        snapshotChanged: () => void (changed = true),
        actor: { type: "cli" },
      },
      command,
      args,
    );
    if (changed && settings.redisUrl) {
      const { connectRedis, redisNames } = await import("@modelgate/data-plane");
      const redis = connectRedis(settings.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 2 });
      try {
        await redis.connect();
        await redis.publish(redisNames().changedChannel, command);
      } finally {
        redis.disconnect();
      }
    }
    return result;
  } finally {
    await db.close();
    if (lock) tighten(settings.dataDir); // PGlite sets its own file modes; keep them private
    lock?.release();
  }
}

function print(result: unknown, json: boolean): void {
  if (json) return void console.log(JSON.stringify(result, null, 2));
  if (Array.isArray(result)) {
    if (result.length === 0) return void console.log("(none)");
    console.table(result);
    return;
  }
  for (const [k, v] of Object.entries(result as object))
    console.log(`${k.padEnd(10)} ${Array.isArray(v) ? v.join(",") : String(v)}`);
  if ((result as { key?: string }).key) console.log("\nKeep this key safe: it is shown only once.");
}

export async function main(argv: string[]): Promise<number> {
  try {
    const { command, args, json, dataDir: dataDirArg } = parseCli(argv);
    const dataDir = resolve(dataDirArg ?? process.env.MODELGATE_DATA_DIR ?? "./data");
    const server = process.env.DATABASE_URL ? null : serverFor(dataDir);
    const result = server ? await viaServer(dataDir, server, command, args) : await direct(command, args, dataDir);
    print(result, json);
    return 0;
  } catch (err) {
    const usage = err instanceof UsageError || (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS");
    console.error(usage ? (err as Error).message : `error: ${(err as Error).message}`);
    return usage ? 2 : 1;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  process.exitCode = await main(process.argv.slice(2));
}
