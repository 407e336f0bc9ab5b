import {
  changePassword,
  confirmTotp,
  disableTotp,
  enrollTotp,
  regenerateRecoveryCodes,
  requestEmailVerification,
  verifyEmail,
} from "../../services/security.ts";
import { builder } from "../builder.ts";
import { principalOf } from "../common.ts";
import { UserRef } from "./user.ts";

// Account security settings: password, e-mail binding, two-step verification. Browser sessions only: an access
// token cannot change the credentials of the person it belongs to.

const TotpEnrollment = builder.objectRef<{ secret: string; uri: string }>("TotpEnrollment").implement({
  fields: (t) => ({
    secret: t.exposeString("secret", { description: "base32 secret for manual entry" }),
    uri: t.exposeString("uri", { description: "otpauth:// URI for a QR code" }),
  }),
});

const EmailVerificationSent = builder.objectRef<{ email: string; expiresAt: Date }>("EmailVerificationSent").implement({
  fields: (t) => ({
    email: t.exposeString("email"),
    expiresAt: t.expose("expiresAt", { type: "DateTime" }),
  }),
});

builder.mutationFields((t) => ({
  changePassword: t.boolean({
    authScopes: { session: true },
    description:
      "Needs the current password, and a TOTP or recovery code when two-step verification is on; signs out every other session and revokes the user's access tokens. Throttled: TOO_MANY_REQUESTS after repeated failures.",
    args: {
      currentPassword: t.arg.string({ required: true }),
      newPassword: t.arg.string({ required: true }),
      code: t.arg.string(),
    },
    resolve: async (_r, args, ctx) => {
      const p = principalOf(ctx);
      await changePassword(ctx.app, p.user.id, p.sessionId, args.currentPassword, args.newPassword, args.code);
      return true;
    },
  }),
  requestEmailVerification: t.field({
    type: EmailVerificationSent,
    authScopes: { session: true },
    description: "Mails a six-digit code to the address (default: the current one) to bind and verify it.",
    args: { email: t.arg.string() },
    resolve: (_r, { email }, ctx) => requestEmailVerification(ctx.app, principalOf(ctx).user.id, email),
  }),
  verifyEmail: t.field({
    type: UserRef,
    authScopes: { session: true },
    args: { code: t.arg.string({ required: true }) },
    resolve: (_r, { code }, ctx) => verifyEmail(ctx.app, principalOf(ctx).user.id, code),
  }),
  enrollTotp: t.field({
    type: TotpEnrollment,
    authScopes: { session: true },
    description: "Starts two-step verification; it is on only after confirmTotp.",
    resolve: (_r, _a, ctx) => enrollTotp(ctx.app, principalOf(ctx).user.id),
  }),
  confirmTotp: t.stringList({
    authScopes: { session: true },
    description: "Confirms enrolment with a code from the app; returns 10 one-time recovery codes (shown once).",
    args: { code: t.arg.string({ required: true }) },
    resolve: (_r, { code }, ctx) => confirmTotp(ctx.app, principalOf(ctx).user.id, code),
  }),
  disableTotp: t.boolean({
    authScopes: { session: true },
    args: { code: t.arg.string({ required: true, description: "a TOTP or recovery code" }) },
    resolve: async (_r, { code }, ctx) => {
      await disableTotp(ctx.app, principalOf(ctx).user.id, code);
      return true;
    },
  }),
  regenerateRecoveryCodes: t.stringList({
    authScopes: { session: true },
    description: "Replaces all recovery codes; needs a current TOTP or recovery code.",
    args: { code: t.arg.string({ required: true }) },
    resolve: (_r, { code }, ctx) => regenerateRecoveryCodes(ctx.app, principalOf(ctx).user.id, code),
  }),
}));
