import type { MailMessage } from "./mailer.ts";

export const verificationMail = (to: string, code: string, minutes: number): MailMessage => ({
  to,
  subject: "Your modelgate verification code",
  text: [
    `Your verification code is: ${code}`,
    "",
    `It expires in ${minutes} minutes. If you did not ask to bind this address, ignore this message.`,
  ].join("\n"),
});

export const invitationMail = (to: string, accountName: string, token: string, days: number): MailMessage => ({
  to,
  subject: `You are invited to ${accountName} on modelgate`,
  text: [
    `You have been invited to the account "${accountName}" on modelgate.`,
    "",
    `Invitation token: ${token}`,
    "",
    `Open the console, choose "Accept invitation" and paste the token. It expires in ${days} days.`,
  ].join("\n"),
});

export const passwordChangedMail = (to: string): MailMessage => ({
  to,
  subject: "Your modelgate password was changed",
  text: "Your password was changed and your other sessions were signed out. If this was not you, contact your operator.",
});
