import type { CanonicalStreamEvent } from "./canonical.ts";
import { SseParser, type SseEvent } from "./sse.ts";
import type { StreamDecoder } from "./types.ts";

/** What every upstream stream decoder's state has: whether the stream reached its end, or is done emitting. */
export interface DecoderState {
  finished: boolean;
  closed: boolean;
}

/**
 * The shell every vendor's stream decoder shares: SSE framing in, that vendor's `decodeEvent` per event, and
 * at the body's end either `end` (the stream finished) or `truncated()`'s error event, exactly once.
 */
export function sseStreamDecoder<S extends DecoderState>(
  state: S,
  decodeEvent: (ev: SseEvent, state: S, out: CanonicalStreamEvent[]) => void,
  truncated: (state: S) => CanonicalStreamEvent,
): StreamDecoder {
  const parser = new SseParser();
  const run = (events: SseEvent[]): CanonicalStreamEvent[] => {
    const out: CanonicalStreamEvent[] = [];
    for (const ev of events) decodeEvent(ev, state, out);
    return out;
  };
  return {
    push: (chunk) => run(parser.push(chunk)),
    end: () => {
      const out = run(parser.flush());
      if (!state.closed) {
        state.closed = true;
        out.push(truncated(state));
      }
      return out;
    },
  };
}
