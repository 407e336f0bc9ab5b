import { pino, type Logger } from "pino";

/** Structured JSON logs; the redaction paths keep credentials out even if a header object is logged by mistake. */
export const createLogger = (name: string, level = process.env.LOG_LEVEL ?? "info"): Logger =>
  pino({
    name,
    level,
    redact: {
      paths: [
        "req.headers.authorization",
        "req.headers['x-api-key']",
        "req.headers['x-goog-api-key']",
        "headers.authorization",
        "key",
        "apiKey",
        // ioredis puts the failed command on its errors: a refused AUTH carries the password as its argument
        "err.command.args",
        "*.command.args",
      ],
      censor: "[redacted]",
    },
  });
