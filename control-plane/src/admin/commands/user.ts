import { z } from "zod";
import { resolveAccount } from "../../services/accounts.ts";
import { createUser } from "../../services/users.ts";
import { accountArg } from "../args.ts";
import { command } from "../command.ts";

// Console logins.

export const userCommands = {
  "user create": command({
    usage: "--email E --password P [--role owner|member|operator] [--account NAME_OR_ID] [--name N]",
    note: "a console login; owners and members belong to an account",
    args: z.object({
      email: z.string().email(),
      password: z.string().min(1),
      role: z.enum(["member", "owner", "operator"]).default("owner"),
      account: accountArg.optional(),
      name: z.string().optional(),
    }),
    options: { accountId: "account" },
    run: async (ctx, a) => {
      const accountId = a.account ? (await resolveAccount(ctx, a.account)).id : null;
      const user = await createUser(ctx, {
        email: a.email,
        password: a.password,
        role: a.role,
        accountId,
        name: a.name ?? null,
      });
      return { id: user.id, email: user.email, role: user.role, accountId: user.accountId };
    },
  }),
};
