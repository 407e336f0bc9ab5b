// Bedrock's refusals: the error's type is in the x-amzn-ErrorType header (`ThrottlingException:http://…`), its
// message in a {"message"} body. Each is put in the gateway's terms, with the status that says what happened.

import type { GatewayErrorKind } from "../../errors.ts";
import type { UpstreamErrorInfo } from "../../protocols/index.ts";
import { obj, parseJsonLoose, str } from "../../protocols/shared.ts";
import type { UpstreamResponse } from "../../upstreams/transport.ts";

interface Mapped {
  status: number;
  kind: GatewayErrorKind;
  code: string;
}

/** By error type (without AWS's `Exception` suffix where it has one). */
const MAPPED: Record<string, Mapped> = {
  Throttling: { status: 429, kind: "rate_limit", code: "rate_limited" },
  ServiceQuotaExceeded: { status: 429, kind: "rate_limit", code: "rate_limited" },
  ModelNotReady: { status: 429, kind: "rate_limit", code: "model_not_ready" },
  Validation: { status: 400, kind: "invalid_request", code: "invalid_request" },
  // The gateway's credential or its permissions: the operator's to fix (a 502 upstream_auth_failed).
  AccessDenied: { status: 403, kind: "permission", code: "access_denied" },
  UnrecognizedClient: { status: 403, kind: "permission", code: "access_denied" },
  ExpiredToken: { status: 403, kind: "permission", code: "access_denied" },
  InvalidSignature: { status: 403, kind: "permission", code: "access_denied" },
  IncompleteSignature: { status: 403, kind: "permission", code: "access_denied" },
  MissingAuthenticationToken: { status: 403, kind: "permission", code: "access_denied" },
  InvalidClientTokenId: { status: 403, kind: "permission", code: "access_denied" },
  // An unknown model id, or one the account has no access to in that region.
  ResourceNotFound: { status: 404, kind: "not_found", code: "model_not_found" },
  ServiceUnavailable: { status: 503, kind: "unavailable", code: "service_unavailable" },
  InternalServer: { status: 500, kind: "upstream", code: "internal_error" },
  ModelError: { status: 502, kind: "upstream", code: "model_error" },
  ModelStreamError: { status: 502, kind: "upstream", code: "model_error" },
  ModelTimeout: { status: 504, kind: "timeout", code: "model_timeout" },
};

/** The error type named by x-amzn-ErrorType, without its namespace and `Exception` suffix. */
export function errorTypeOf(headers: UpstreamResponse["headers"]): string | null {
  const raw = headers["x-amzn-errortype"];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (!value) return null;
  const name = value.split(":")[0]!.trim();
  return name.endsWith("Exception") ? name.slice(0, -"Exception".length) : name;
}

export function parseBedrockError(
  _status: number,
  headers: UpstreamResponse["headers"],
  body: string,
): (UpstreamErrorInfo & { status?: number }) | null {
  const type = errorTypeOf(headers);
  if (type === null) return null;
  const mapped = MAPPED[type];
  if (mapped === undefined) return null;
  const b = obj(parseJsonLoose(body));
  const message = str(b.message) ?? str(b.Message) ?? `The upstream refused the call (${type}).`;
  return { status: mapped.status, kind: mapped.kind, code: mapped.code, message, param: null };
}
