import type { ClientBase } from "pg";
import { from as copyFrom } from "pg-copy-streams";

/**
 * Runs a `COPY … FROM STDIN` on the client with `data` as its whole input (COPY's text format). Resolves once
 * Postgres has taken every row; rejects with Postgres' error (a unique violation, a row outside the partition)
 * and the transaction is then aborted, as with any failed statement.
 */
export function copyInto(client: ClientBase, sql: string, data: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const stream = client.query(copyFrom(sql));
    stream.on("error", reject);
    stream.on("finish", () => resolve());
    stream.end(data);
  });
}

/**
 * One field of a row in COPY's text format: \N for null; a backslash, tab, newline or carriage return escaped
 * (the only characters the format reads specially inside a field).
 */
export function copyField(v: string | number | bigint | boolean | null | undefined): string {
  if (v === null || v === undefined) return "\\N";
  if (typeof v === "boolean") return v ? "t" : "f";
  if (typeof v !== "string") return String(v);
  return SPECIAL.test(v) ? v.replace(SPECIAL_ALL, (c) => ESCAPES[c]!) : v;
}
const SPECIAL = /[\\\t\n\r]/;
const SPECIAL_ALL = /[\\\t\n\r]/g;
const ESCAPES: Record<string, string> = { "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r" };
