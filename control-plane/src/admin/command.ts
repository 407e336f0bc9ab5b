import type { z } from "zod";
import type { ServiceContext } from "../services/context.ts";

// One admin command: what it takes (zod, over the CLI's option names), the service it calls and what it answers.
// The CLI's argv parser, its help and the running server's admin endpoint all read the same definitions.

export interface AdminCommand<S extends z.ZodType = z.ZodType> {
  /** the options as the help shows them, after the command's name */
  usage: string;
  /** a line under the usage, when the options need one */
  note?: string;
  args: S;
  /** the option a bare argument fills (`key revoke ID`) */
  positional?: "id";
  /** a service's field name → this command's option, where they differ (a refusal then names the option) */
  options?: Record<string, string>;
  run(ctx: ServiceContext, args: z.output<S>): Promise<unknown>;
}

/** Declares a command with its argument types inferred from its schema. */
export const command = <S extends z.ZodType>(c: AdminCommand<S>): AdminCommand<S> => c;

/** A refusal of the command line itself: the CLI exits 2, the admin endpoint answers 400. */
export class UsageError extends Error {}
