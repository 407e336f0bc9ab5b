// Deeply nested JSON parses fine but then overflows the stack of whatever walks it (validation, translation,
// JSON.stringify on the way upstream): a 500 for a request that is simply bad. And a body of a hundred
// thousand tiny objects costs hundreds of milliseconds of validation and translation on the one thread that
// serves every request. So bodies are measured before they are parsed: how deep objects and arrays nest, and
// how many there are. One pass over the bytes with no allocation; string contents are skipped with the
// native indexOf (memchr), so a body that is mostly text costs well under a millisecond per megabyte.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

export interface JsonLimits {
  /** MODELGATE_MAX_JSON_DEPTH: how deep objects and arrays may nest; default 64 */
  depth: number;
  /** MODELGATE_MAX_JSON_CONTAINERS: how many objects and arrays a body may hold; default 25,000 */
  containers: number;
}

const positive = (v: string | undefined, fallback: number): number => {
  const n = Number(v ?? fallback);
  return Number.isSafeInteger(n) && n > 0 ? n : fallback;
};

export const jsonLimitsFrom = (env: NodeJS.ProcessEnv = process.env): JsonLimits => ({
  depth: positive(env.MODELGATE_MAX_JSON_DEPTH, 64),
  containers: positive(env.MODELGATE_MAX_JSON_CONTAINERS, 25_000),
});

/** Which limit the JSON text exceeds, if any (strings are skipped; the text need not be valid JSON). */
export function exceededJsonLimit(raw: Uint8Array, limits: JsonLimits): "depth" | "containers" | null {
  let depth = 0;
  let containers = 0;
  const n = raw.length;
  for (let i = 0; i < n; i++) {
    const c = raw[i]!;
    if (c === QUOTE) {
      // Jump to the closing quote: the next quote not escaped by an odd run of backslashes.
      let j = i;
      for (;;) {
        j = raw.indexOf(QUOTE, j + 1);
        if (j === -1) return null; // unterminated string: JSON.parse will say so
        let k = j - 1;
        while (raw[k] === BACKSLASH) k--;
        if ((j - k) % 2 === 1) break;
      }
      i = j;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limits.depth) return "depth";
      if (++containers > limits.containers) return "containers";
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return null;
}

/** True when the JSON text nests objects and arrays deeper than `max`. */
export const nestsDeeperThan = (raw: Uint8Array, max: number): boolean =>
  exceededJsonLimit(raw, { depth: max, containers: Infinity }) === "depth";
