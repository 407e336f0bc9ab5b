// Incremental Server-Sent Events parsing: feed raw upstream bytes as they arrive, get whole events back.
// Only the unconsumed tail is kept between chunks, so a long stream is never re-scanned.

export interface SseEvent {
  event: string | null;
  data: string;
}

export class SseParser {
  private buffer = "";
  private readonly decoder = new TextDecoder();

  /** Returns the events completed by this chunk (possibly none). */
  push(chunk: Uint8Array | string): SseEvent[] {
    const text = typeof chunk === "string" ? chunk : this.decoder.decode(chunk, { stream: true });
    const buf = this.buffer === "" ? text : this.buffer + text;
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
      const ev =
        lf && buf.startsWith("data: ", start) && buf.indexOf("\n", start) === index
          ? { event: null, data: buf.slice(start + 6, index) } // one data line: the usual event
          : parseEvent(buf.slice(start, index));
      if (ev) events.push(ev);
      start = index + length;
    }
    this.buffer = start === 0 ? buf : buf.slice(start);
    return events;
  }

  /** Whatever is left when the stream ends (an event without its terminating blank line). */
  flush(): SseEvent[] {
    this.buffer += this.decoder.decode();
    const rest = this.buffer;
    this.buffer = "";
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
