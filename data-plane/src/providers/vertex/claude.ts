// Claude on Vertex: Anthropic's Messages API behind Google's rawPredict. The body is the Messages body with
// the model in the URL instead (`model` is refused in the body), the API version in the body
// (`anthropic_version: "vertex-2023-10-16"`, not a header), and `stream` kept: streamRawPredict answers the
// same SSE events as Anthropic. Betas travel in the body's `anthropic_beta` list rather than a header.

import type { ProtocolCall } from "../types.ts";
import { modelSegment } from "./paths.ts";

export const VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16";

export const claudeUrl = (publisherBase: string, model: string, stream: boolean): string =>
  `${publisherBase}/models/${modelSegment(model)}:${stream ? "streamRawPredict" : "rawPredict"}`;

/** The Messages body (the gateway's translation or the client's own bytes) as Vertex takes it. */
export function claudeBody(call: ProtocolCall): string {
  const text = typeof call.body === "string" ? call.body : call.body.toString("utf8");
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // The gateway parsed this body before; reaching here is a bug of the gateway's, not the operator's.
    throw new Error("a Messages body for Vertex is not JSON");
  }
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw new Error("a Messages body for Vertex is not an object");
  const { model: _model, ...rest } = body;
  const out: Record<string, unknown> = { anthropic_version: VERTEX_ANTHROPIC_VERSION, ...rest };
  const betas = betasOf(call.headers);
  if (betas.length > 0) {
    const own = Array.isArray(rest.anthropic_beta) ? (rest.anthropic_beta as unknown[]) : [];
    out.anthropic_beta = [...new Set([...own, ...betas])];
  }
  out.anthropic_version = VERTEX_ANTHROPIC_VERSION;
  return JSON.stringify(out);
}

function betasOf(headers: Record<string, string> | undefined): string[] {
  if (headers === undefined) return [];
  const found = Object.entries(headers).find(([k]) => k.toLowerCase() === "anthropic-beta")?.[1];
  return found === undefined
    ? []
    : found
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== "");
}
