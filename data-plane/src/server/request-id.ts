import { randomBytes } from "node:crypto";

/** 24 hex characters: unique enough across replicas, short enough to read out to support. */
export const newRequestId = (): string => `req_${randomBytes(12).toString("hex")}`;
