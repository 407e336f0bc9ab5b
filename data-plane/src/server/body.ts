import type { IncomingMessage } from "node:http";
import { GatewayError } from "../errors.ts";

/** Reads a request body up to maxBytes; a larger one is a 413 before it is buffered. */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > maxBytes) throw tooLarge(maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw tooLarge(maxBytes);
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

const tooLarge = (max: number) =>
  new GatewayError("too_large", "request_too_large", `Request body is larger than the limit of ${max} bytes.`);

/** Parses a JSON object body, or says exactly why not. */
export function parseJsonObject(raw: Buffer): Record<string, unknown> {
  if (raw.length === 0) throw new GatewayError("invalid_request", "invalid_json", "Request body is empty; expected a JSON object.");
  let value: unknown;
  try {
    value = JSON.parse(raw.toString("utf8"));
  } catch (err) {
    throw new GatewayError("invalid_request", "invalid_json", `Request body is not valid JSON: ${(err as Error).message}.`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new GatewayError("invalid_request", "invalid_json", "Request body must be a JSON object.");
  }
  return value as Record<string, unknown>;
}
