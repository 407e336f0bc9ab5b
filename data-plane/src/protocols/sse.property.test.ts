import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SseParser, type SseEvent } from "./sse.ts";

// The parser's fast paths (one string scanned in place, \n\n only when no \r was seen) must give exactly what
// the plain reading of the format gives, however the bytes are split into chunks. The oracle below parses a
// whole stream at once, the way the format is written (an event ends at a blank line of any line ending).
function oracle(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  let rest = text;
  for (;;) {
    let best: { index: number; length: number } | null = null;
    for (const sep of ["\r\n\r\n", "\n\n", "\r\r"]) {
      const i = rest.indexOf(sep);
      if (i !== -1 && (best === null || i < best.index)) best = { index: i, length: sep.length };
    }
    const raw = best ? rest.slice(0, best.index) : rest;
    rest = best ? rest.slice(best.index + best.length) : "";
    if (best || raw.trim()) {
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
      if (event !== null || data.length > 0) events.push({ event, data: data.join("\n") });
    }
    if (!best) return events;
  }
}

const eol = fc.constantFrom("\n", "\r\n", "\r");
const value = fc.string({ unit: fc.constantFrom("a", "é", "😀", ":", " ", "{", "}", '"', "[DONE]") });
const line = fc.oneof(
  fc.tuple(fc.constantFrom("data: ", "data:", "event: ", "event:", ": ", "id: ", "data"), value).map(([f, v]) => f + v),
  value,
);
const event = fc
  .tuple(fc.array(fc.tuple(line, eol), { minLength: 1, maxLength: 4 }), eol)
  .map(([lines, end]) => lines.map(([l, e]) => l + e).join("") + end);
// Mostly the common shape (one data line, \n\n), sometimes anything.
const stream = fc
  .array(fc.oneof({ weight: 3, arbitrary: value.map((v) => `data: ${v}\n\n`) }, { weight: 1, arbitrary: event }), {
    maxLength: 12,
  })
  .chain((events) => fc.tuple(fc.constant(events.join("")), fc.array(fc.nat(), { maxLength: 8 })));

function cut<T extends { length: number; slice(a: number, b?: number): T }>(whole: T, at: number[]): T[] {
  const points = [...new Set(at.map((n) => (whole.length === 0 ? 0 : n % (whole.length + 1))))].sort((a, b) => a - b);
  const parts: T[] = [];
  let from = 0;
  for (const p of points) {
    parts.push(whole.slice(from, p));
    from = p;
  }
  parts.push(whole.slice(from));
  return parts;
}

describe("SseParser", () => {
  it("gives the events of a whole-stream reading however the text is split into chunks", () => {
    fc.assert(
      fc.property(stream, ([text, at]) => {
        const p = new SseParser();
        const got = cut(text, at).flatMap((c) => p.push(c));
        expect([...got, ...p.flush()]).toEqual(oracle(text));
      }),
      { numRuns: 2000 },
    );
  });

  it("… and however its UTF-8 bytes are split (characters cut in two included)", () => {
    fc.assert(
      fc.property(stream, ([text, at]) => {
        const p = new SseParser();
        const got = cut(Buffer.from(text), at).flatMap((c) => p.push(c));
        expect([...got, ...p.flush()]).toEqual(oracle(text));
      }),
      { numRuns: 2000 },
    );
  });

  it("reads the usual upstream chunk, several events in one read, in place", () => {
    const p = new SseParser();
    expect(p.push('data: {"a":1}\n\ndata: {"b":2}\n\ndata: [DO')).toEqual([
      { event: null, data: '{"a":1}' },
      { event: null, data: '{"b":2}' },
    ]);
    expect(p.push("NE]\n\n")).toEqual([{ event: null, data: "[DONE]" }]);
    expect(p.flush()).toEqual([]);
  });
});
