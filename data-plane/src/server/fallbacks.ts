import type { IncomingMessage } from "node:http";
import { GatewayError } from "../errors.ts";

/**
 * The fallbacks a request names itself (docs/routing.md): OpenAI clients' `models: [first, second, …]`
 * (OpenRouter's convention: `model` may be omitted or name the first) and any protocol's
 * `x-modelgate-fallbacks: a,b` header. Neither reaches the upstream: the header is not forwarded, and `models`
 * is taken out of the body here (the caller re-serialises the body it passes through).
 */
export const FALLBACKS_HEADER = "x-modelgate-fallbacks";
/** At most this many names per list (the body's `models` counts the first too), each at most MAX_NAME long. */
export const MAX_FALLBACKS = 5;
const MAX_NAME = 200;

export interface RequestFallbacks {
  /** the models to try after the one the request names, in order, without duplicates; [] when none */
  fallbacks: string[];
  /** `models` was taken out of the body (and `model` set from it when absent): the raw bytes are stale */
  bodyChanged: boolean;
}

const NONE: RequestFallbacks = { fallbacks: [], bodyChanged: false };

/**
 * Reads and bounds the request's fallbacks, taking `models` out of an OpenAI body (and naming its first entry as
 * `model` when the body names none). A malformed or oversized list is a 400 in the client's shape.
 */
export function takeRequestFallbacks(
  clientProtocol: string,
  body: Record<string, unknown>,
  req: IncomingMessage,
): RequestFallbacks {
  const header = req.headers[FALLBACKS_HEADER];
  const fromHeader = header === undefined ? [] : headerList(Array.isArray(header) ? header.join(",") : header);
  if (clientProtocol !== "openai" || !("models" in body))
    return fromHeader.length === 0
      ? NONE
      : {
          fallbacks: dedupe(fromHeader, typeof body.model === "string" ? body.model : null),
          bodyChanged: false,
        };
  const models = body.models;
  delete body.models;
  if (models === null || models === undefined) return { fallbacks: dedupe(fromHeader, null), bodyChanged: true };
  if (!Array.isArray(models) || models.length === 0 || models.length > MAX_FALLBACKS)
    throw invalid(`Invalid 'models': expected an array of 1 to ${MAX_FALLBACKS} model names.`, "models");
  models.forEach((m, i) => {
    if (typeof m !== "string" || m === "" || m.length > MAX_NAME)
      throw invalid(`Invalid 'models[${i}]': expected a model name of 1 to ${MAX_NAME} characters.`, `models[${i}]`);
  });
  const names = models as string[];
  if (body.model === undefined || body.model === null || body.model === "") body.model = names[0];
  const primary = typeof body.model === "string" ? body.model : null;
  return { fallbacks: dedupe([...names, ...fromHeader], primary), bodyChanged: true };
}

function headerList(value: string): string[] {
  const names = value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (names.length > MAX_FALLBACKS)
    throw invalid(`Invalid ${FALLBACKS_HEADER} header: at most ${MAX_FALLBACKS} model names.`, FALLBACKS_HEADER);
  for (const n of names)
    if (n.length > MAX_NAME)
      throw invalid(
        `Invalid ${FALLBACKS_HEADER} header: a model name is at most ${MAX_NAME} characters.`,
        FALLBACKS_HEADER,
      );
  return names;
}

/** In order, each once, without the model the request names first. */
function dedupe(names: string[], primary: string | null): string[] {
  const out: string[] = [];
  for (const n of names) if (n !== primary && !out.includes(n)) out.push(n);
  return out;
}

const invalid = (message: string, param: string) =>
  new GatewayError("invalid_request", "invalid_fallbacks", message, param);
