import { AppError } from "../services/errors.ts";
import type { ServiceContext } from "../services/context.ts";
import { type AdminCommand, UsageError } from "./command.ts";
import { accountCommands } from "./commands/account.ts";
import { alertCommands } from "./commands/alerts.ts";
import { budgetCommands } from "./commands/budget.ts";
import { contractCommands } from "./commands/contract.ts";
import { keyCommands } from "./commands/key.ts";
import { usageCommands } from "./commands/usage.ts";
import { userCommands } from "./commands/user.ts";
import { upstreamCommands } from "./commands/upstream.ts";
import { webhookCommands } from "./commands/webhook.ts";

// The admin commands as a table, independent of how they arrive (CLI argv straight on the database, or the
// running server's admin endpoint). Each group's module holds its commands: arguments, service, output.
// Arguments are validated here, once, so both paths refuse the same things; a service's refusal of an input
// comes back as a usage error naming the command's option.

export { UsageError } from "./command.ts";

export const commands = {
  ...accountCommands,
  ...keyCommands,
  ...budgetCommands,
  ...contractCommands,
  ...usageCommands,
  ...userCommands,
  ...alertCommands,
  ...webhookCommands,
  ...upstreamCommands,
};

export type CommandName = keyof typeof commands;
export const commandNames = Object.keys(commands) as CommandName[];
type ArgsOf<N extends CommandName> = Parameters<(typeof commands)[N]["run"]>[1];

export const commandOf = (name: CommandName): AdminCommand => commands[name] as AdminCommand;

export function parseCommandArgs<N extends CommandName>(name: N, args: Record<string, unknown>): ArgsOf<N> {
  const r = commandOf(name).args.safeParse(args);
  if (!r.success) {
    throw new UsageError(r.error.issues.map((i) => `--${i.path.join(".") || "?"}: ${i.message}`).join("; "));
  }
  return r.data as ArgsOf<N>;
}

export async function runAdminCommand(
  ctx: ServiceContext,
  name: CommandName,
  rawArgs: Record<string, unknown>,
): Promise<unknown> {
  const c = commandOf(name);
  const args = parseCommandArgs(name, rawArgs);
  try {
    return await c.run(ctx, args);
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== "BAD_USER_INPUT") throw err;
    const field = typeof err.extra.field === "string" ? err.extra.field : null;
    const option = field === null ? null : (c.options?.[field] ?? kebab(field));
    throw new UsageError(option ? `--${option}: ${err.message}` : err.message);
  }
}
const kebab = (s: string) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
