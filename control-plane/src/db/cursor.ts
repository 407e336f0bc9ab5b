import { badInput } from "../errors/app-error.ts";

// Keyset cursors on (a timestamp, id): newest-first pages that cost the same at any depth and never shift when
// rows arrive meanwhile. Opaque to clients (base64url of the pair).

export const encodeCursor = (at: Date, id: string) =>
  Buffer.from(JSON.stringify([at.toISOString(), id])).toString("base64url");

export function decodeCursor(cursor: string): { startedAt: Date; id: string } {
  try {
    const [t, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as [string, string];
    const startedAt = new Date(t);
    if (Number.isNaN(startedAt.getTime()) || typeof id !== "string") throw new Error();
    return { startedAt, id };
  } catch {
    throw badInput("the cursor is not valid", "after");
  }
}
