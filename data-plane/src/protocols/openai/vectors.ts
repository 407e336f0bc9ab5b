// OpenAI's `encoding_format: "base64"`: each vector as the base64 of its little-endian float32 values. The
// openai SDK asks for it by default and decodes it itself.

export function toBase64Floats(v: number[]): string {
  const buf = Buffer.allocUnsafe(v.length * 4);
  for (let i = 0; i < v.length; i++) buf.writeFloatLE(v[i]!, i * 4);
  return buf.toString("base64");
}

export function fromBase64Floats(s: string): number[] {
  const buf = Buffer.from(s, "base64");
  const out: number[] = new Array<number>(Math.floor(buf.length / 4));
  for (let i = 0; i < out.length; i++) out[i] = buf.readFloatLE(i * 4);
  return out;
}
