import { randomFillSync } from "node:crypto";

// Random bytes drawn 6 KB at a time and hex-encoded 12 at a time: 0.5 µs a call against 2 µs for randomUUID
// cut into the same shape (five slices and a template), which was 0.6% of the data plane's busy time at c=64.
const pool = Buffer.alloc(12 * 512);
let offset = pool.length;

/** 24 hex characters (96 random bits): unique across replicas, short enough to read out to support. */
export const newRequestId = (): string => {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const id = `req_${pool.toString("hex", offset, offset + 12)}`;
  offset += 12;
  return id;
};
