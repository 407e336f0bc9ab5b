// nodemailer ships no types and @types/nodemailer is not installed: the little we use, typed by hand.
declare module "nodemailer" {
  interface SendMailOptions {
    from?: string;
    to: string;
    subject: string;
    text: string;
  }
  interface Transporter {
    sendMail(message: SendMailOptions): Promise<unknown>;
    close(): void;
  }
  export function createTransport(url: string): Transporter;
  const nodemailer: { createTransport: typeof createTransport };
  export default nodemailer;
}
