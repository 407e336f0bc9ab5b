import type { IncomingMessage } from "node:http";
import { GatewayError } from "../errors.ts";
import { exceededJsonLimit, jsonLimitsFrom } from "../http/json-depth.ts";

const JSON_LIMITS = jsonLimitsFrom();

/** The body's size from Content-Length when it is declared, valid and within maxBytes; else null. */
export function declaredLength(req: IncomingMessage, maxBytes: number): number | null {
  const v = req.headers["content-length"];
  if (v === undefined || req.headers["transfer-encoding"] !== undefined) return null;
  const n = Number(v);
  return Number.isSafeInteger(n) && n > 0 && n <= maxBytes ? n : null;
}

/** Reads a request body up to maxBytes; a larger one is a 413 before it is buffered. */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > maxBytes) return Promise.reject(tooLarge(maxBytes));
  // Plain listeners rather than an async iterator: this runs on every call and the iterator's machinery
  // cost more than the copying.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        cleanup();
        req.resume(); // drain the rest without keeping it
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    const onClose = () => {
      if (req.complete) return;
      cleanup();
      reject(new GatewayError("invalid_request", "client_closed", "The client closed the connection.", null, {}, 499));
    };
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onClose);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onClose);
  });
}

const tooLarge = (max: number) =>
  new GatewayError("too_large", "request_too_large", `Request body is larger than the limit of ${max} bytes.`);

/** Parses a JSON object body, or says exactly why not. */
export function parseJsonObject(raw: Buffer): Record<string, unknown> {
  if (raw.length === 0)
    throw new GatewayError("invalid_request", "invalid_json", "Request body is empty; expected a JSON object.");
  const exceeded = exceededJsonLimit(raw, JSON_LIMITS);
  if (exceeded === "depth")
    throw new GatewayError(
      "invalid_request",
      "json_too_deep",
      `Request body nests objects and arrays deeper than ${JSON_LIMITS.depth} levels.`,
    );
  if (exceeded === "containers")
    throw new GatewayError(
      "too_large",
      "request_too_complex",
      `Request body holds more than ${JSON_LIMITS.containers} objects and arrays.`,
    );
  let value: unknown;
  try {
    value = JSON.parse(raw.toString("utf8"));
  } catch (err) {
    throw new GatewayError(
      "invalid_request",
      "invalid_json",
      `Request body is not valid JSON: ${(err as Error).message}.`,
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new GatewayError("invalid_request", "invalid_json", "Request body must be a JSON object.");
  }
  return value as Record<string, unknown>;
}
