// Incremental Server-Sent Events parsing: feed raw upstream bytes as they arrive, get whole events back.
// Only the unconsumed tail is kept between chunks, and only the new bytes are scanned for an event's end, so
// neither a long stream nor one long event is ever re-scanned.

import { GatewayError } from "../errors.ts";

export interface SseEvent {
  event: string | null;
  data: string;
}

/**
 * The longest single event an upstream may send, in characters (MODELGATE_UPSTREAM_MAX_EVENT_BYTES, set at
 * start-up by setMaxEventChars; docs/security.md). An event is read whole before it is parsed, so without a
 * bound one that never ends grows without limit.
 */
export const DEFAULT_MAX_EVENT_CHARS = 4 * 1024 * 1024;
let maxEventChars = DEFAULT_MAX_EVENT_CHARS;

export function setMaxEventChars(n: number): void {
  maxEventChars = n;
}

export const maxEventCharsNow = (): number => maxEventChars;

/** The error an upstream event over the limit ends its stream with (a 502 or an error frame for the client). */
export const eventTooLarge = (): GatewayError =>
  new GatewayError(
    "upstream",
    "upstream_event_too_large",
    `The upstream sent a stream event larger than the gateway accepts (${maxEventChars} bytes).`,
  );

export class SseParser {
  /** the unconsumed text (an event not ended yet), in the pieces it came in: joined once it ends */
  private pending: string[] = [];
  private pendingLength = 0;
  /** the pending text's last 3 characters: an event's end (at most 4 characters) may straddle two chunks */
  private tail = "";
  /** the pending text holds a \r (events may then end in \r\n\r\n or \r\r) */
  private pendingCr = false;
  private readonly decoder = new TextDecoder();

  /** Returns the events completed by this chunk (possibly none). */
  push(chunk: Uint8Array | string): SseEvent[] {
    const text = typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true });
    let buf = text;
    if (this.pendingLength !== 0) {
      // Only the new text (and the few characters before it) can end the pending event.
      const probe = this.tail + text;
      const cr = this.pendingCr || probe.indexOf("\r") !== -1;
      if (cr ? findEventEnd(probe, 0) === null : probe.indexOf("\n\n") === -1) {
        this.hold(text, cr);
        return [];
      }
      this.pending.push(text);
      buf = this.pending.join("");
      this.pending = [];
      this.pendingLength = 0;
      this.tail = "";
    }
    const events: SseEvent[] = [];
    // Every upstream chunk of every stream comes through here, so the common case is kept cheap (a profile
    // of 32 concurrent streams): events are read in place from one string (no slice of the rest per event),
    // and without a \r anywhere the only separator to look for is \n\n.
    const lf = buf.indexOf("\r") === -1;
    let start = 0;
    for (;;) {
      let index: number;
      let length: number;
      if (lf) {
        index = buf.indexOf("\n\n", start);
        length = 2;
      } else {
        const end = findEventEnd(buf, start);
        index = end?.index ?? -1;
        length = end?.length ?? 0;
      }
      if (index === -1) break;
      if (index - start > maxEventChars) throw eventTooLarge();
      const ev =
        lf && buf.startsWith("data: ", start) && buf.indexOf("\n", start) === index
          ? { event: null, data: buf.slice(start + 6, index) } // one data line: the usual event
          : parseEvent(buf.slice(start, index));
      if (ev) events.push(ev);
      start = index + length;
    }
    if (start !== buf.length) this.hold(start === 0 ? buf : buf.slice(start), !lf && buf.indexOf("\r", start) !== -1);
    return events;
  }

  private hold(text: string, cr: boolean): void {
    this.pending.push(text);
    this.pendingLength += text.length;
    this.pendingCr = cr;
    this.tail = text.length >= 3 ? text.slice(-3) : (this.tail + text).slice(-3);
    if (this.pendingLength > maxEventChars) {
      this.pending = [];
      this.pendingLength = 0;
      throw eventTooLarge();
    }
  }

  /** Whatever is left when the stream ends (an event without its terminating blank line). */
  flush(): SseEvent[] {
    const rest = this.pending.join("") + this.decoder.decode();
    this.pending = [];
    this.pendingLength = 0;
    this.tail = "";
    this.pendingCr = false;
    const ev = rest.trim() ? parseEvent(rest) : null;
    return ev ? [ev] : [];
  }
}

function findEventEnd(buf: string, from: number): { index: number; length: number } | null {
  // An event ends at the first blank line: \n\n, \r\n\r\n or \r\r (Google uses \r\n\r\n).
  let best: { index: number; length: number } | null = null;
  for (const sep of ["\r\n\r\n", "\n\n", "\r\r"]) {
    const i = buf.indexOf(sep, from);
    if (i !== -1 && (best === null || i < best.index)) best = { index: i, length: sep.length };
  }
  return best;
}

export function parseEvent(raw: string): SseEvent | null {
  let event: string | null = null;
  const data: string[] = [];
  for (const line of raw.split(/\r\n|\r|\n/)) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  if (event === null && data.length === 0) return null;
  return { event, data: data.join("\n") };
}

/** Encodes one SSE event the way each vendor frames it. */
export const encodeSse = (data: string, event?: string): string =>
  event ? `event: ${event}\ndata: ${data}\n\n` : `data: ${data}\n\n`;
