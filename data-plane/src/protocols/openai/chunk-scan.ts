// Reads what the relay needs from one OpenAI stream chunk (`chat.completion.chunk`) without JSON.parse: the
// characters of output it delivers, where its model name is, and whether it holds anything that needs the
// parsed object (usage, an error). A stream's token chunks are almost all of its events, and parsing each
// one only to find nothing was most of the relay's own JavaScript per chunk (a CPU profile of the bench's
// streams scenario, docs/performance.md).
//
// The text is a "byte string": one character per byte of the UTF-8 the upstream sent (latin1), so that chunk
// boundaries inside a multi-byte character do not matter and the bytes go out exactly as they came.
//
// Why scanning for keys is exact on valid JSON: outside strings there are only structure, numbers and
// literals, and inside a string every `"` is escaped. So `"name"` followed by `:` is a key named `name`
// unless its first quote is preceded by a backslash (then it is text inside a string, e.g. `\"name\":`; a
// real key's opening quote never follows a backslash). Keys are matched as written: an upstream spelling a
// key with \u escapes is not a case any upstream produces (JSON.stringify and every JSON writer we know write
// keys plainly), and the relay does not defend against it.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** The closing quote's index found by the last stringLength. */
export const lastStringEnd = () => stringEnd;

/** What scanChunk found; one shared object (the scan is synchronous and its result read at once). */
export interface ChunkScan {
  /** UTF-16 characters of delta content, reasoning_content and tool call arguments (as JSON.parse would count) */
  chars: number;
  /** the model value, quotes included, as [start, end) in the text; start -1 when there is no model key */
  modelStart: number;
  modelEnd: number;
  /** a `"usage":null` member with one adjacent comma, [start, end): the part to cut for a client that did not ask */
  usageStart: number;
  usageEnd: number;
  /** how many counted string values there are */
  strings: number;
  /**
   * The string values that may differ from chunk to chunk without changing anything else the relay reads:
   * the counted ones and OpenAI's `obfuscation` padding; each as its opening and closing quote, unsorted.
   */
  varOpen: number[];
  varClose: number[];
  varCounted: boolean[];
}

const scan: ChunkScan = {
  chars: 0,
  modelStart: -1,
  modelEnd: -1,
  usageStart: -1,
  usageEnd: -1,
  strings: 0,
  varOpen: [],
  varClose: [],
  varCounted: [],
};

/** Index of the value after key `key` (quotes included) found at `i`, or -1 when that occurrence is not a key. */
function valueAt(text: string, i: number, key: string): number {
  if (i > 0 && text.charCodeAt(i - 1) === BACKSLASH) return -1;
  let j = i + key.length;
  while (j < text.length && isSpace(text.charCodeAt(j))) j++;
  if (text.charCodeAt(j) !== COLON) return -1;
  j++;
  while (j < text.length && isSpace(text.charCodeAt(j))) j++;
  return j;
}

let stringEnd = 0;

/**
 * UTF-16 length of the JSON string whose opening quote is at `q` (byte string), its closing quote's index
 * in `stringEnd`; -1 when it does not end in the text.
 */
export function stringLength(text: string, q: number): number {
  let n = 0;
  for (let j = q + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === QUOTE) {
      stringEnd = j;
      return n;
    }
    if (c === 0x0a) return -1;
    if (c === BACKSLASH) {
      // \uXXXX is one UTF-16 unit (a surrogate pair is written as two); any other escape is one character.
      j += text.charCodeAt(j + 1) === 0x75 ? 5 : 1;
      n++;
    } else if (c < 0x80) n++;
    else if (c >= 0xf0)
      n += 2; // a 4-byte sequence: a surrogate pair
    else if (c >= 0xc0) n++; // the lead byte of a 2- or 3-byte sequence; continuation bytes count nothing
  }
  return -1;
}

/**
 * Adds the lengths of every string value of `key` (when `counted`) and notes them as variable; false when a
 * value is neither a string nor null.
 */
function countKey(text: string, key: string, counted = true): boolean {
  for (let i = text.indexOf(key); i !== -1; i = text.indexOf(key, i + key.length)) {
    const v = valueAt(text, i, key);
    if (v === -1) continue;
    const c = text.charCodeAt(v);
    if (c === QUOTE) {
      const n = stringLength(text, v);
      if (n === -1) return false;
      if (counted) {
        scan.chars += n;
        scan.strings++;
      }
      scan.varOpen.push(v);
      scan.varClose.push(stringEnd);
      scan.varCounted.push(counted);
      i = stringEnd - key.length + 1;
    } else if (!text.startsWith("null", v)) return false;
  }
  return true;
}

/**
 * Scans one event's data (a byte string). Returns the shared result, or null when the event needs JSON.parse:
 * not an object, an `error` or a non-null `usage` key, more than one `model` key or one that is not a plain
 * string, a counted field that is not a string or null.
 */
export function scanChunk(text: string): ChunkScan | null {
  if (text.charCodeAt(0) !== 0x7b || text.charCodeAt(text.length - 1) !== 0x7d) return null; // { … }
  scan.chars = 0;
  scan.modelStart = -1;
  scan.usageStart = -1;
  scan.strings = 0;
  scan.varOpen.length = 0;
  scan.varClose.length = 0;
  scan.varCounted.length = 0;
  for (let i = text.indexOf('"error"'); i !== -1; i = text.indexOf('"error"', i + 7))
    if (valueAt(text, i, '"error"') !== -1) return null;
  for (let i = text.indexOf('"usage"'); i !== -1; i = text.indexOf('"usage"', i + 7)) {
    const v = valueAt(text, i, '"usage"');
    if (v === -1) continue;
    if (scan.usageStart !== -1 || !text.startsWith("null", v)) return null;
    // The member and one comma next to it, so that what is left is still an object.
    let before = i - 1;
    while (before > 0 && isSpace(text.charCodeAt(before))) before--;
    let after = v + 4;
    while (after < text.length && isSpace(text.charCodeAt(after))) after++;
    if (text.charCodeAt(before) === 0x2c) {
      scan.usageStart = before;
      scan.usageEnd = v + 4;
    } else {
      scan.usageStart = i;
      scan.usageEnd = text.charCodeAt(after) === 0x2c ? after + 1 : v + 4;
    }
  }
  for (let i = text.indexOf('"model"'); i !== -1; i = text.indexOf('"model"', i + 7)) {
    const v = valueAt(text, i, '"model"');
    if (v === -1) continue;
    if (scan.modelStart !== -1 || text.charCodeAt(v) !== QUOTE) return null;
    let end = v + 1;
    while (end < text.length && text.charCodeAt(end) !== QUOTE && text.charCodeAt(end) !== BACKSLASH) end++;
    // An escape in the name: left to JSON.parse (no upstream names its models so).
    if (text.charCodeAt(end) !== QUOTE) return null;
    scan.modelStart = v;
    scan.modelEnd = end + 1;
  }
  if (
    !countKey(text, '"content"') ||
    !countKey(text, '"reasoning_content"') ||
    !countKey(text, '"arguments"') ||
    !countKey(text, '"obfuscation"', false)
  )
    return null;
  return scan;
}
