// Puts the client's model name back into an OpenAI response without re-serialising it: the upstream's bytes
// (its field order, its formatting, numbers exactly as written) stay as they are, and the request path
// skips a JSON.stringify of every answer. Outside JSON strings a quote is never escaped, so an unescaped
// `"model": "<name>"` in the text is a real key-value pair; when it is not found exactly once (a nested
// object with a model key, say), the caller re-serialises instead.

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** `text` with its one `"model": <from>` pair set to `to`; null when that pair is not there exactly once. */
export function replaceModelField(text: string, from: string, to: string): string | null {
  const pattern = new RegExp(`"model"(\\s*):(\\s*)${escapeRegExp(JSON.stringify(from))}`, "g");
  let found: RegExpExecArray | null = null;
  for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
    if (found !== null) return null;
    found = m;
  }
  if (found === null) return null;
  return `${text.slice(0, found.index)}"model"${found[1]}:${found[2]}${JSON.stringify(to)}${text.slice(found.index + found[0].length)}`;
}
