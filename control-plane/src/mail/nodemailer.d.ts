// nodemailer ships no types and @types/nodemailer is not installed: the little we use, typed by hand.
declare module "nodemailer" {
  export interface SendMailOptions {
    from?: string;
    to: string;
    subject: string;
    text: string;
  }
  export interface Transporter {
    sendMail(message: SendMailOptions): Promise<unknown>;
    close(): void;
  }
  export function createTransport(url: string): Transporter;
  const nodemailer: { createTransport: typeof createTransport };
  export default nodemailer;
}
