import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from "node:crypto";

// Passwords are stored as "scrypt$N$r$p$salt$hash" (salt and hash base64), so the cost can be raised later
// without breaking existing hashes: verification reads the parameters from the stored value, and a sign-in
// with a hash of a lower cost stores it again at the current one (needsRehash).
//
// The cost is OWASP's minimum for scrypt: N = 2^17, r = 8, p = 1 (128 MiB and ~0.45 s on a 2-core VM per
// hash). MODELGATE_SCRYPT_N changes N (a power of two from 2^14); the test suites lower it to stay fast.

const N = scryptN(process.env.MODELGATE_SCRYPT_N);
const R = 8;
const P = 1;
const KEYLEN = 32;

export function scryptN(v: string | undefined): number {
  if (v === undefined || v === "") return 2 ** 17;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 2 ** 14 || n > 2 ** 20 || (n & (n - 1)) !== 0)
    throw new Error(`MODELGATE_SCRYPT_N must be a power of two from 16384 to 1048576, not ${v}`);
  return n;
}

/**
 * At most two hashes at once: each takes 128 MiB and a thread of libuv's pool (four by default, shared with
 * file and DNS work), so a burst of sign-ins queues here instead of exhausting memory or the pool.
 */
const MAX_PARALLEL = 2;
let running = 0;
const waiting: (() => void)[] = [];

/**
 * How many sign-in checks may wait for a hash slot (MODELGATE_LOGIN_HASH_QUEUE, default 16): past that a sign-in
 * is refused at once instead of queueing, so a flood from many addresses makes refusals, not a queue that every
 * real sign-in waits behind (16 waiting at ~0.45 s a hash, two at a time: about 4 s at most).
 */
export const LOGIN_HASH_QUEUE = hashQueue(process.env.MODELGATE_LOGIN_HASH_QUEUE);

export function hashQueue(v: string | undefined): number {
  if (v === undefined || v === "") return 16;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 10_000)
    throw new Error(`MODELGATE_LOGIN_HASH_QUEUE must be an integer from 0 to 10000, not ${v}`);
  return n;
}

/** Every hash slot is taken and `maxWaiting` checks already wait for one. */
export class HashQueueFull extends Error {
  constructor() {
    super("too many password checks at once");
  }
}

async function limited<T>(fn: () => Promise<T>, maxWaiting = Infinity): Promise<T> {
  if (running >= MAX_PARALLEL) {
    if (waiting.length >= maxWaiting) throw new HashQueueFull();
    await new Promise<void>((r) => waiting.push(r));
  }
  running++;
  try {
    return await fn();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

const scrypt = (password: string, salt: Buffer, keylen: number, opts: ScryptOptions, maxWaiting = Infinity) =>
  limited(
    () =>
      new Promise<Buffer>((resolve, reject) =>
        scryptCb(password, salt, keylen, { ...opts, maxmem: 256 * 1024 * 1024 }, (err, key) =>
          err ? reject(err) : resolve(key),
        ),
      ),
    maxWaiting,
  );

/** The stored hash was made at a lower cost than the current one. */
export function needsRehash(stored: string): boolean {
  const parts = stored.split("$");
  return parts[0] === "scrypt" && Number(parts[1]) < N;
}

export const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 256;

/** A human-readable reason the password is refused, or null when it is acceptable. */
export function passwordProblem(password: string): string | null {
  if (password.length < MIN_PASSWORD_LENGTH) return `the password must have at least ${MIN_PASSWORD_LENGTH} characters`;
  if (password.length > MAX_PASSWORD_LENGTH) return `the password must have at most ${MAX_PASSWORD_LENGTH} characters`;
  return null;
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, KEYLEN, { N, r: R, p: P });
  return `scrypt$${N}$${R}$${P}$${salt.toString("base64")}$${hash.toString("base64")}`;
}

/**
 * Constant-time comparison; a malformed stored value simply fails. With `maxWaiting`, throws HashQueueFull
 * rather than wait behind that many other checks.
 */
export async function verifyPassword(password: string, stored: string, maxWaiting = Infinity): Promise<boolean> {
  const parts = stored.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return false;
  const [, n, r, p, saltText, hashText] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(hashText, "base64");
  if (expected.length < 16) return false;
  const cost = Number(n);
  if (!Number.isInteger(cost) || cost < 2 || cost > 2 ** 20) return false; // a tampered row must not make us allocate gigabytes
  const actual = await scrypt(
    password,
    Buffer.from(saltText, "base64"),
    expected.length,
    {
      N: cost,
      r: Number(r),
      p: Number(p),
    },
    maxWaiting,
  );
  return timingSafeEqual(actual, expected);
}

/** A real hash of a random password: verifying against it costs what a real check costs (no user-exists oracle). */
let dummy: Promise<string> | undefined;
export const dummyHash = () => (dummy ??= hashPassword(randomBytes(16).toString("hex")));
