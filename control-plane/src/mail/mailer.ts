import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Transporter } from "nodemailer";

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
  close(): Promise<void>;
}

export interface MailerOptions {
  /** smtp://user:pass@host:587 or smtps://…; without it mail goes to the outbox directory */
  smtpUrl?: string;
  outboxDir: string;
  from?: string;
}

/**
 * SMTP through nodemailer when a URL is configured; otherwise a file outbox (one JSON file per message), so an
 * offline installation still works: the operator reads the codes from disk, and tests read them the same way.
 */
export function createMailer(opts: MailerOptions): Mailer {
  const from = opts.from ?? "modelgate <no-reply@modelgate.local>";
  if (opts.smtpUrl) {
    const url = opts.smtpUrl;
    let transport: Promise<Transporter> | undefined;
    const get = () => (transport ??= import("nodemailer").then((m) => m.default.createTransport(url)));
    return {
      async send(message) {
        await (await get()).sendMail({ from, ...message });
      },
      async close() {
        if (transport) (await transport).close();
      },
    };
  }
  return createOutboxMailer(opts.outboxDir, from);
}

export interface OutboxMessage extends MailMessage {
  from: string;
  sentAt: string;
}

function createOutboxMailer(dir: string, from: string): Mailer {
  let seq = 0;
  return {
    async send(message) {
      await mkdir(dir, { recursive: true });
      const body: OutboxMessage = { from, ...message, sentAt: new Date().toISOString() };
      // time first, so a directory listing sorts oldest to newest
      const name = `${Date.now().toString().padStart(15, "0")}-${String(seq++).padStart(6, "0")}-${randomBytes(3).toString("hex")}.json`;
      await writeFile(join(dir, name), JSON.stringify(body, null, 2), { mode: 0o600 });
    },
    async close() {},
  };
}
