// The Responses API's errors: over HTTP, OpenAI's shape ({"error":{"message","type","param","code"}}); in a
// stream, an `error` event followed by `response.failed`.

import type { GatewayError } from "../../errors.ts";
import { withRequestId } from "../../errors.ts";
import { encodeSse } from "../sse.ts";

/** The code a failed Response carries: OpenAI's `server_error` / `rate_limit_exceeded` family. */
export const errorCodeOf = (err: GatewayError): string =>
  err.kind === "rate_limit"
    ? "rate_limit_exceeded"
    : err.kind === "invalid_request"
      ? "invalid_prompt"
      : "server_error";

/**
 * One `error` event, as the Responses stream carries it (the SDKs surface its message). `sequence` continues a
 * stream already under way (a passthrough stream the gateway writes into); 0 is a stream's first event.
 */
export const responsesErrorFrame = (err: GatewayError, requestId: string, sequence = 0): string =>
  encodeSse(
    JSON.stringify({
      type: "error",
      code: err.code,
      message: withRequestId(err.message, requestId),
      param: err.param,
      sequence_number: sequence,
    }),
    "error",
  );
