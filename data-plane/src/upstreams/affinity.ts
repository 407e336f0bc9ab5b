/**
 * A conversation's mark for prompt-cache affinity (docs/routing.md): calls that share it go to the same route
 * (pick-route.ts) and the same key of its pool (upstream-call.ts) while those are healthy, so the provider's
 * prompt cache, which is per credential and per prefix, hits.
 *
 * The mark is the client's own cache key when it sends one (OpenAI's and Responses' `prompt_cache_key`), else
 * a hash of the conversation's opening: the system prompt (Anthropic's `system`, Gemini's `systemInstruction`,
 * Responses' `instructions`, OpenAI's leading system/developer messages) and the first other message. Those
 * stay the same on every turn of one conversation, and differ between conversations.
 *
 * It runs on the hot path for every call, on the body already parsed: only text is read, and of a long text
 * only its length, first and last characters (SAMPLE each), so a 100 KB system prompt costs what a 2 KB one
 * does. Two openings that differ only in their middle share a mark: they then share a route, which costs
 * nothing but spread.
 */
const SAMPLE = 256;

/** At most this many leading system messages and content parts are read: the mark needs no more. */
const MAX_ITEMS = 8;

export function affinityOf(body: Record<string, unknown>): string | null {
  const key = body.prompt_cache_key;
  if (typeof key === "string" && key !== "") return `k:${key}`;
  a = 0x811c9dc5;
  b = 0x5bd1e995;
  let any = false;
  for (const system of [body.system, body.systemInstruction, body.instructions]) {
    if (system !== undefined) any = value(system, 0) || any;
  }
  const list = body.messages ?? body.contents ?? body.input;
  if (typeof list === "string") any = text(list) || any;
  else if (Array.isArray(list)) {
    for (let i = 0; i < list.length && i < MAX_ITEMS; i++) {
      const m = list[i] as { role?: unknown } | null;
      any = value(m, 0) || any;
      // The leading system/developer turns and the first other one: the opening every later turn repeats.
      const role = m !== null && typeof m === "object" ? m.role : undefined;
      if (role !== "system" && role !== "developer") break;
    }
  }
  return any ? `h:${(a >>> 0).toString(36)}.${(b >>> 0).toString(36)}` : null;
}

// Two FNV-1a lanes (64 bits of mark) over the sampled text; module state, as the hash runs synchronously (a
// class's fields cost several times more per character in a profile).
let a = 0;
let b = 0;

/** Hashes a text: its length, then its first and last SAMPLE characters. */
function text(s: string): boolean {
  const n = s.length;
  let x = Math.imul(a ^ n, 0x01000193);
  let y = Math.imul(b ^ n, 0x01000193);
  const head = n <= 2 * SAMPLE ? n : SAMPLE;
  for (let i = 0; i < head; i++) {
    const c = s.charCodeAt(i);
    x = Math.imul(x ^ c, 0x01000193);
    y = Math.imul(y ^ c, 0x01000193) ^ (y >>> 15);
  }
  for (let i = head === n ? n : n - SAMPLE; i < n; i++) {
    const c = s.charCodeAt(i);
    x = Math.imul(x ^ c, 0x01000193);
    y = Math.imul(y ^ c, 0x01000193) ^ (y >>> 15);
  }
  a = Math.imul(x, 0x01000193);
  b = Math.imul(y ^ 0xff, 0x01000193);
  return true;
}

/** The text of a message, a content part or a list of them: strings, and `text`/`content`/`parts` members. */
function value(v: unknown, depth: number): boolean {
  if (typeof v === "string") return text(v);
  if (v === null || typeof v !== "object" || depth > 3) return false;
  if (Array.isArray(v)) {
    let any = false;
    for (let i = 0; i < v.length && i < MAX_ITEMS; i++) any = value(v[i], depth + 1) || any;
    return any;
  }
  const o = v as Record<string, unknown>;
  let any = false;
  if (typeof o.role === "string") text(o.role);
  if (o.text !== undefined) any = value(o.text, depth + 1) || any;
  if (o.content !== undefined) any = value(o.content, depth + 1) || any;
  if (o.parts !== undefined) any = value(o.parts, depth + 1) || any;
  return any;
}
