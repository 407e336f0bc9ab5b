// Puts the client's model name back into an OpenAI response without re-serialising it: the upstream's bytes
// (its field order, its formatting, numbers exactly as written) stay as they are, and the request path
// skips a JSON.stringify of every answer. Outside JSON strings a quote is never escaped, so an unescaped
// `"model": "<name>"` in the text is a real key-value pair; when it is not found exactly once (a nested
// object with a model key, say), the caller re-serialises instead.

const KEY = '"model"';

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/**
 * `text` with its one `"model": <from>` pair set to `to`; null when that pair is not there exactly once.
 * `key` names another string field the same way (Gemini's `"modelVersion"`).
 */
export function replaceModelField(text: string, from: string, to: string, key = KEY): string | null {
  const KEY = key;
  const value = JSON.stringify(from);
  let start = -1;
  let end = -1;
  for (let i = text.indexOf(KEY); i !== -1; i = text.indexOf(KEY, i + KEY.length)) {
    // An escaped quote (\"model\") is text inside a string, not a key.
    if (i > 0 && text.charCodeAt(i - 1) === 0x5c) continue;
    let j = i + KEY.length;
    while (j < text.length && isSpace(text.charCodeAt(j))) j++;
    if (text.charCodeAt(j) !== 0x3a) continue; // ':'
    j++;
    while (j < text.length && isSpace(text.charCodeAt(j))) j++;
    if (!text.startsWith(value, j)) continue;
    if (start !== -1) return null;
    start = j;
    end = j + value.length;
  }
  if (start === -1) return null;
  return text.slice(0, start) + JSON.stringify(to) + text.slice(end);
}
