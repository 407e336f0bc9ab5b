import { notFound } from "../../services/errors.ts";
import { revokeInvitation } from "../../services/users.ts";
import { builder } from "../builder.ts";
import { accountIdFor, checkId } from "../common.ts";
import { InvitationRef } from "./membership.ts";

// Invitations can be taken back before they are accepted: by an owner of the account or an operator. Another
// account's invitation answers NOT_FOUND, as if it did not exist.

builder.mutationFields((t) => ({
  revokeInvitation: t.field({
    type: InvitationRef,
    authScopes: { authenticated: true },
    description: "Owners (for their account) and operators revoke an invitation that was not accepted yet.",
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_r, args, ctx) => {
      const invitation = await ctx.app.prisma.invitation.findUnique({
        where: { id: checkId(String(args.id), "invitation") },
      });
      if (!invitation) throw notFound("invitation");
      try {
        accountIdFor(ctx, invitation.accountId, "manage");
      } catch (err) {
        if (ctx.principal?.user.accountId !== invitation.accountId) throw notFound("invitation");
        throw err;
      }
      return revokeInvitation(ctx.app, invitation.id);
    },
  }),
}));
