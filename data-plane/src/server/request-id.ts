import { randomUUID } from "node:crypto";

/** 24 hex characters (96 random bits): unique across replicas, short enough to read out to support. */
export const newRequestId = (): string => {
  const u = randomUUID(); // cached entropy: much cheaper than randomBytes per call
  return `req_${u.slice(0, 8)}${u.slice(9, 13)}${u.slice(15, 18)}${u.slice(19, 23)}${u.slice(24, 29)}`;
};
