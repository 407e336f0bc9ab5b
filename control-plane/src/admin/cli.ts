import { parseArgs } from "node:util";
import { commandNames, runAdminCommand, UsageError, type CommandName } from "./commands.ts";
import { readAdminToken } from "./token.ts";

const HELP = `modelgate-admin: operator commands

  account create --name NAME [--email E] [--balance AMOUNT]
  account topup  --account NAME_OR_ID --amount AMOUNT
  key create     --account NAME_OR_ID [--name N] [--models ID,ID] [--ip-allowlist CIDR,CIDR]
                 [--quota AMOUNT] [--expires ISO8601] [--rpm N] [--tpm N] [--concurrency N]
  key revoke     ID
  key list       --account NAME_OR_ID
  account show   --account NAME_OR_ID
  account update --account NAME_OR_ID [--status active|disabled] [--rpm N] [--tpm N] [--concurrency N]
                 (account-wide rate limits, applied to every key of the account)
  contract set   --account NAME_OR_ID --model ID --input PRICE --output PRICE [--cached-input PRICE]
                 (prices per 1M tokens, in account currency)
  usage list     --account NAME_OR_ID [--limit N]
  user create    --email E --password P [--role owner|member|operator] [--account NAME_OR_ID] [--name N]
                 (a console login; owners and members belong to an account)

Add --json for machine-readable output. Amounts are decimal currency units (10 = 10.000000).
Distributed mode (DATABASE_URL set): works on the database and asks the control plane, through REDIS_URL,
to publish the change to the data planes. Embedded mode: talks to the running server (MODELGATE_URL,
default http://127.0.0.1:$PORT) with the admin token in the data directory, or opens ./data when no
server runs.`;

type Positional = "id";
const positional: Partial<Record<CommandName, Positional>> = { "key revoke": "id" };

export function parseCli(argv: string[]): { command: CommandName; args: Record<string, unknown>; json: boolean } {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
      name: { type: "string" },
      email: { type: "string" },
      balance: { type: "string" },
      account: { type: "string" },
      amount: { type: "string" },
      models: { type: "string" },
      "ip-allowlist": { type: "string" },
      quota: { type: "string" },
      expires: { type: "string" },
      rpm: { type: "string" },
      tpm: { type: "string" },
      concurrency: { type: "string" },
      model: { type: "string" },
      input: { type: "string" },
      output: { type: "string" },
      "cached-input": { type: "string" },
      limit: { type: "string" },
      password: { type: "string" },
      role: { type: "string" },
      status: { type: "string" },
    },
  });
  if (values.help || positionals.length < 2) throw new UsageError(HELP);
  const command = `${positionals[0]} ${positionals[1]}` as CommandName;
  if (!commandNames.includes(command)) throw new UsageError(`unknown command '${command}'\n\n${HELP}`);
  const { json, help: _help, ...args } = values;
  const pos = positional[command];
  const rest = positionals.slice(2);
  if (pos) {
    if (rest.length !== 1) throw new UsageError(`'${command}' takes exactly one ${pos.toUpperCase()}`);
    (args as Record<string, unknown>)[pos] = rest[0];
  } else if (rest.length) throw new UsageError(`unexpected argument '${rest[0]}'`);
  return { command, args, json: json === true };
}

async function viaServer(dataDir: string, command: CommandName, args: Record<string, unknown>): Promise<unknown | typeof NO_SERVER> {
  const token = process.env.MODELGATE_ADMIN_TOKEN ?? readAdminToken(dataDir);
  const url = process.env.MODELGATE_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8080}`;
  if (!token) return NO_SERVER;
  let res: Response;
  try {
    res = await fetch(`${url}/api/admin`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ command, args }),
    });
  } catch {
    return NO_SERVER; // nothing listening: open the database directly
  }
  const body = (await res.json().catch(() => ({}))) as { result?: unknown; error?: string };
  if (!res.ok) throw new UsageError(body.error ?? `server answered ${res.status}`);
  return body.result;
}
const NO_SERVER = Symbol("no server");

async function direct(command: CommandName, args: Record<string, unknown>): Promise<unknown> {
  const [{ openDatabase }, { migrate }, { readSettings }] = await Promise.all([
    import("../db/client.ts"),
    import("../db/migrate.ts"),
    import("../main/settings.ts"),
  ]);
  const settings = readSettings(process.env, 8080);
  const db = await openDatabase({ databaseUrl: settings.databaseUrl, dataDir: settings.dataDir });
  let changed = false;
  try {
    await migrate(db.sql);
    const result = await runAdminCommand({ prisma: db.prisma, masterKey: settings.masterKey, snapshotChanged: () => void (changed = true) }, command, args);
    if (changed && settings.redisUrl) {
      const [{ Redis }, { redisNames }] = await Promise.all([import("ioredis"), import("@modelgate/data-plane/contract/index")]);
      const redis = new Redis(settings.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 2 });
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
  }
}

function print(result: unknown, json: boolean): void {
  if (json) return void console.log(JSON.stringify(result, null, 2));
  if (Array.isArray(result)) {
    if (result.length === 0) return void console.log("(none)");
    console.table(result);
    return;
  }
  for (const [k, v] of Object.entries(result as object)) console.log(`${k.padEnd(10)} ${Array.isArray(v) ? v.join(",") : String(v)}`);
  if ((result as { key?: string }).key) console.log("\nKeep this key safe: it is shown only once.");
}

export async function main(argv: string[]): Promise<number> {
  try {
    const { command, args, json } = parseCli(argv);
    const dataDir = process.env.MODELGATE_DATA_DIR ?? "./data";
    let result: unknown = NO_SERVER;
    if (!process.env.DATABASE_URL) result = await viaServer(dataDir, command, args);
    if (result === NO_SERVER) result = await direct(command, args);
    print(result, json);
    return 0;
  } catch (err) {
    const usage = err instanceof UsageError || (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS");
    console.error(usage ? (err as Error).message : `error: ${(err as Error).message}`);
    return usage ? 2 : 1;
  }
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith("cli.ts")) {
  process.exitCode = await main(process.argv.slice(2));
}
