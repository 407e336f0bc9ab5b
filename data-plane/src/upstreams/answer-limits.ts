import { wholeNumberEnv } from "../env.ts";
import { setMaxEventChars } from "../protocols/sse.ts";
import type { AnswerLimits } from "./response-handler.ts";

// What the gateway accepts of an upstream's answer (docs/security.md, "Upstream answers"). An upstream is the
// operator's choice but not to be trusted with the gateway's memory or event loop: a 300 MB JSON answer added
// 1.5 GB and stalled every other call for seconds, one 200 MB event without its blank line for 10–15 s.

/**
 * 16 MiB for a body read whole (a non-streamed answer). The largest real answers are inline media: an image
 * of 1024×1024 is 1.5–2 MB of base64, a text answer of 128k output tokens about 0.5 MB; 16 MiB holds several
 * images. Parsing is synchronous: realistic JSON parses at 1–3 ms per MB on this machine's class (a few big
 * strings), so a whole 16 MiB answer holds the event loop about 20–50 ms; a body past the limit is never
 * parsed at all.
 */
export const DEFAULT_MAX_ANSWER_BYTES = 16 * 1024 * 1024;
/**
 * 4 MiB for one streamed event: streamed events are a token or a few, at most one inline image (~2 MB of
 * base64); an event is held whole until its blank line, so this bounds what a stream can pile up.
 */
export const DEFAULT_MAX_EVENT_BYTES = 4 * 1024 * 1024;
/**
 * 60 minutes from the status line to the answer's end: the longest real streams (reasoning models thinking
 * at length) take minutes; a stream that drips a byte now and then is never cut by the idle timeout.
 */
export const DEFAULT_MAX_ANSWER_MS = 60 * 60 * 1000;

/**
 * The limits from the environment (unset: the default; anything but a whole number >= 1 stops the start,
 * naming the variable: see env.ts, NUMERIC_SETTINGS). Also sets the SSE parsers' event limit, which every
 * protocol's stream reader shares.
 */
export function answerLimitsFromEnv(env: NodeJS.ProcessEnv): AnswerLimits {
  const opts = (unit: string) => ({ unit, min: 1 });
  setMaxEventChars(wholeNumberEnv(env, "MODELGATE_UPSTREAM_MAX_EVENT_BYTES", DEFAULT_MAX_EVENT_BYTES, opts("bytes")));
  return {
    maxBytes: wholeNumberEnv(env, "MODELGATE_UPSTREAM_MAX_ANSWER_BYTES", DEFAULT_MAX_ANSWER_BYTES, opts("bytes")),
    maxMs: wholeNumberEnv(env, "MODELGATE_UPSTREAM_MAX_ANSWER_MS", DEFAULT_MAX_ANSWER_MS, opts("milliseconds")),
  };
}
