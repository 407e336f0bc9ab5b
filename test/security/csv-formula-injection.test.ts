import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { csvCell } from "../../control-plane/src/exports/format.ts";

// Issue 25, item 11: CSV formula injection in exports. `x;=1+1;` was left unquoted, so a spreadsheet opening a
// usage export with ';' as separator found a formula cell (36 of them in one export; 3 in an audit export
// through an anonymous sign-in e-mail); a leading space, no-break space, newline or full-width '＝' was not
// guarded. Checked here as a spreadsheet reads a file: with ',' or ';' (or tab) as separator, no cell may start
// with a formula trigger, after the spaces a spreadsheet trims, unless it starts with the apostrophe.

/** A spreadsheet's reading: a field that starts with '"' is quoted ('""' is a quote; text after the closing
 * quote is kept, as lenient readers do); any other field runs to the separator or the end of the line. */
function readCsv(text: string, sep: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let i = 0;
  const endOfField = () => i >= text.length || text[i] === sep || text[i] === "\n" || text[i] === "\r";
  for (;;) {
    let cell = "";
    if (text[i] === '"') {
      i++;
      while (i < text.length) {
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            cell += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        cell += text[i++];
      }
    }
    while (!endOfField()) cell += text[i++];
    row.push(cell);
    if (i >= text.length) break;
    if (text[i] === sep) {
      i++;
      continue;
    }
    if (text[i] === "\r" && text[i + 1] === "\n") i++;
    i++;
    rows.push(row);
    row = [];
    if (i >= text.length) return rows;
  }
  rows.push(row);
  return rows;
}

// what a spreadsheet may trim before looking at the first character (independent of the code under test)
// eslint-disable-next-line no-control-regex -- control characters are among what is trimmed
const LEADING = /^[\s\u0000-\u001f\u007f-\u009f\u180e\u200b-\u200d\u2060\ufeff]+/u;
// = + - @ and the full-width and small forms spreadsheets fold into them
const TRIGGER = /^[=+\-@\u2212\ufe62\ufe63\ufe66\ufe6b\uff0b\uff0d\uff1d\uff20]/u;
const formulaCells = (text: string, sep: string) =>
  readCsv(text, sep)
    .flat()
    .filter((c) => TRIGGER.test(c.replace(LEADING, "")) && !c.startsWith("'"));

const SEPARATORS = [",", ";", "\t"];
const special = fc.constantFrom(
  ..."=+-@,;\t\r\n\"' a1".split(""),
  "\u00a0",
  "\u2003",
  "\u3000",
  "\u200b",
  "\ufeff",
  "\uff1d",
  "\uff0b",
  "\uff0d",
  "\uff20",
  "\u2212",
);
const text = fc.oneof(fc.string({ unit: special, maxLength: 24 }), fc.string({ unit: "binary", maxLength: 24 }));
const RUNS = Number(process.env.FUZZ_RUNS ?? 5_000);

describe("CSV exports carry no formula, whatever separator they are opened with (issue 25, item 11)", () => {
  it("the reported cells", () => {
    for (const v of ["x;=1+1;", " =1+1", "\u00a0=1+1", "\n=1+1", "\uff1d1+1", "a\t@SUM(A1)", "=1+1", '";=1+1'])
      for (const sep of SEPARATORS) expect(formulaCells(csvCell(v), sep), `${JSON.stringify(v)} ${sep}`).toEqual([]);
    expect(csvCell("x;=1+1;")).toBe(`"x;'=1+1;"`);
    expect(csvCell("\uff1d1+1")).toBe("'\uff1d1+1");
    // ours stay as they were: numbers, plain text, a comma quoted
    expect(csvCell(-5)).toBe("-5");
    expect(csvCell("acme-chat-2025-01-01")).toBe("acme-chat-2025-01-01");
    expect(csvCell('a,"b"')).toBe('"a,""b"""');
  });

  it("for any text, the emitted cell read with ',' ';' or tab has no formula cell", () => {
    fc.assert(
      fc.property(text, (v) => {
        for (const sep of SEPARATORS) expect(formulaCells(csvCell(v), sep)).toEqual([]);
        // a cell that a ',' reader reads back is the text, defused only by apostrophes
        const [[back]] = readCsv(csvCell(v), ",") as [[string]];
        expect(back.replace(/'/g, "")).toBe(v.replace(/'/g, ""));
      }),
      { numRuns: RUNS },
    );
  });

  it("for any row of texts and lists (tags), the whole line read with ',' ';' or tab has no formula cell", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(text, fc.array(text, { maxLength: 3 })), { minLength: 1, maxLength: 5 }),
        (cells) => {
          const line = `${cells.map(csvCell).join(",")}\r\n`;
          for (const sep of SEPARATORS) expect(formulaCells(line, sep)).toEqual([]);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
