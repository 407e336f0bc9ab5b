// Which provider-side ids each account was given. Every tenant's calls to a passthrough upstream (an
// `openai-responses` upstream keeps conversations itself) go through the operator's one provider account, so
// the provider would answer any tenant that names a response or item id, whoever it belongs to. The gateway
// therefore remembers, per account, the ids the provider handed out in its answers (hashed: no id is kept in
// clear, and a hash names nothing to whoever reads the store) for as long as the provider keeps them, and a
// request naming any other id is refused before it goes upstream.

import { createHash } from "node:crypto";
import type { Redis } from "ioredis";

export interface ProviderIdRegistry {
  /** Remembers that the provider gave these ids to this account. */
  record(accountId: string, ids: readonly string[]): Promise<void>;
  /** The first of `ids` this account was not given (or whose record expired); null when it owns them all. */
  foreign(accountId: string, ids: readonly string[]): Promise<string | null>;
}

const digest = (accountId: string, id: string): string =>
  createHash("sha256").update(accountId).update("\0").update(id).digest("base64url");

/** In-process (embedded mode): each account's own ids, its oldest forgotten first beyond `perAccount`. */
export class MemoryProviderIdRegistry implements ProviderIdRegistry {
  private readonly accounts = new Map<string, Map<string, number>>();
  constructor(
    private readonly ttlMs: number,
    /** one account's ids never push out another's: each account has its own bound */
    private readonly perAccount = 100_000,
  ) {}

  async record(accountId: string, ids: readonly string[]): Promise<void> {
    let own = this.accounts.get(accountId);
    if (!own) this.accounts.set(accountId, (own = new Map()));
    const expires = Date.now() + this.ttlMs;
    for (const id of ids) {
      const h = digest(accountId, id);
      own.delete(h);
      own.set(h, expires);
    }
    while (own.size > this.perAccount) own.delete(own.keys().next().value!);
  }

  async foreign(accountId: string, ids: readonly string[]): Promise<string | null> {
    const own = this.accounts.get(accountId);
    const now = Date.now();
    for (const id of ids) {
      const h = digest(accountId, id);
      const expires = own?.get(h);
      if (expires === undefined || expires <= now) {
        own?.delete(h);
        return id;
      }
    }
    return null;
  }
}

/** Redis (distributed mode): one key per (account, id) digest, expiring with the provider's own record. */
export class RedisProviderIdRegistry implements ProviderIdRegistry {
  constructor(
    private readonly redis: Redis,
    /** e.g. `modelgate:pids:` */
    private readonly prefix: string,
    private readonly ttlMs: number,
  ) {}

  async record(accountId: string, ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    const batch = this.redis.pipeline();
    for (const id of ids) batch.set(this.prefix + digest(accountId, id), "1", "PX", this.ttlMs);
    const results = await batch.exec();
    const failed = results?.find(([err]) => err);
    if (failed) throw failed[0];
  }

  async foreign(accountId: string, ids: readonly string[]): Promise<string | null> {
    if (ids.length === 0) return null;
    const found = await this.redis.mget(ids.map((id) => this.prefix + digest(accountId, id)));
    const i = found.findIndex((v) => v === null);
    return i === -1 ? null : ids[i]!;
  }
}
