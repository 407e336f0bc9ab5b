// Where the Responses API's stored responses live when the operator turns storing on
// (MODELGATE_RESPONSES_STORE=1): Redis in distributed mode (every replica, and a restarted one, finds them),
// process memory in embedded mode. Each record is sealed with the master key (AES-256-GCM) and keyed by
// account, so one account can never read another's; records expire after a TTL.
//
// Each account has its own quotas, a number of records and the bytes they hold (sealed): past either, the
// account's own oldest records go. One account's calls never push out another's (a global bound did: 10,001
// tiny calls of one tenant evicted another's stored response), and no account can fill memory or Redis.

import type { Redis } from "ioredis";
import { open, seal } from "../crypto/secret-box.ts";
import type { ConversationStore } from "../protocols/index.ts";

export interface ConversationStoreOptions {
  masterKey: Buffer;
  ttlMs: number;
  /** MODELGATE_RESPONSES_MAX_PER_ACCOUNT: records one account keeps at most */
  maxPerAccount?: number;
  /** MODELGATE_RESPONSES_MAX_BYTES_PER_ACCOUNT: sealed bytes one account keeps at most */
  maxBytesPerAccount?: number;
}

export const DEFAULT_MAX_PER_ACCOUNT = 10_000;
export const DEFAULT_MAX_BYTES_PER_ACCOUNT = 64 * 1024 * 1024;

const keyOf = (accountId: string, id: string) => `${accountId}:${id}`;

interface Quotas {
  count: number;
  bytes: number;
}
const quotasOf = (o: ConversationStoreOptions): Quotas => ({
  count: o.maxPerAccount ?? DEFAULT_MAX_PER_ACCOUNT,
  bytes: o.maxBytesPerAccount ?? DEFAULT_MAX_BYTES_PER_ACCOUNT,
});

interface Kept {
  expires: number;
  sealed: string;
}

export class MemoryConversationStore implements ConversationStore {
  /** per account, its records oldest first (a Map keeps insertion order) and the bytes they hold */
  private readonly accounts = new Map<string, { records: Map<string, Kept>; bytes: number }>();
  private readonly quotas: Quotas;
  constructor(private readonly opts: ConversationStoreOptions) {
    this.quotas = quotasOf(opts);
  }

  async get(accountId: string, id: string): Promise<{ record: Record<string, unknown>; bytes: number } | null> {
    const own = this.accounts.get(accountId);
    const r = own?.records.get(id);
    if (!own || !r) return null;
    if (r.expires <= Date.now()) {
      this.drop(accountId, id);
      return null;
    }
    return {
      record: JSON.parse(open(this.opts.masterKey, r.sealed)) as Record<string, unknown>,
      bytes: r.sealed.length,
    };
  }

  async put(accountId: string, id: string, record: Record<string, unknown>): Promise<void> {
    const sealed = seal(this.opts.masterKey, JSON.stringify(record));
    this.drop(accountId, id);
    // A record larger than the account's whole byte quota is not kept (it would push out everything else).
    if (sealed.length > this.quotas.bytes) return;
    let own = this.accounts.get(accountId);
    if (!own) this.accounts.set(accountId, (own = { records: new Map(), bytes: 0 }));
    own.records.set(id, { expires: Date.now() + this.opts.ttlMs, sealed });
    own.bytes += sealed.length;
    const now = Date.now();
    for (const [oldest, r] of own.records) {
      const over = own.records.size > this.quotas.count || own.bytes > this.quotas.bytes;
      if (!over && r.expires > now) break;
      if (oldest === id) break;
      this.drop(accountId, oldest);
    }
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return this.drop(accountId, id);
  }

  private drop(accountId: string, id: string): boolean {
    const own = this.accounts.get(accountId);
    const r = own?.records.get(id);
    if (!own || !r) return false;
    own.records.delete(id);
    own.bytes -= r.sealed.length;
    if (own.records.size === 0) this.accounts.delete(accountId);
    return true;
  }
}

// An account's index: a sorted set of its record ids by time written, and a hash of their sizes with the total
// under a field no id can have (ids never hold a NUL). Both share the account's hash tag, so the script runs on
// Redis Cluster; the records themselves are separate keys, deleted by the caller from the ids it returns.
const TOTAL = "\u0000total";
const INDEX_LUA = `
local idx, sizes = KEYS[1], KEYS[2]
local op, id = ARGV[1], ARGV[2]
local function drop(member)
  local b = tonumber(redis.call('HGET', sizes, member) or '0')
  redis.call('HDEL', sizes, member)
  redis.call('HINCRBY', sizes, '${TOTAL}', -b)
  redis.call('ZREM', idx, member)
end
if op == 'del' then
  if redis.call('ZSCORE', idx, id) then drop(id) end
  return {}
end
local bytes, now, ttl, maxCount, maxBytes = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
if redis.call('ZSCORE', idx, id) then drop(id) end
for _, m in ipairs(redis.call('ZRANGEBYSCORE', idx, '-inf', now - ttl)) do drop(m) end
redis.call('ZADD', idx, now, id)
redis.call('HSET', sizes, id, bytes)
local total = redis.call('HINCRBY', sizes, '${TOTAL}', bytes)
local evicted = {}
while redis.call('ZCARD', idx) > maxCount or total > maxBytes do
  local first = redis.call('ZRANGE', idx, 0, 0)[1]
  if (not first) or first == id then break end
  total = total - tonumber(redis.call('HGET', sizes, first) or '0')
  drop(first)
  evicted[#evicted + 1] = first
end
redis.call('PEXPIRE', idx, ttl)
redis.call('PEXPIRE', sizes, ttl)
return evicted
`;

export class RedisConversationStore implements ConversationStore {
  private readonly quotas: Quotas;
  constructor(
    private readonly redis: Redis,
    /** e.g. `modelgate:responses:` */
    private readonly prefix: string,
    private readonly opts: ConversationStoreOptions,
  ) {
    this.quotas = quotasOf(opts);
  }

  /** `modelgate:responses:` keeps the records, `modelgate:responses-index:` the accounts' indexes */
  private index(accountId: string): [string, string] {
    const at = `${this.prefix.replace(/:$/, "")}-index:`;
    return [`${at}ids:{${accountId}}`, `${at}sizes:{${accountId}}`];
  }

  async get(accountId: string, id: string): Promise<{ record: Record<string, unknown>; bytes: number } | null> {
    const sealed = await this.redis.get(this.prefix + keyOf(accountId, id));
    return sealed === null
      ? null
      : { record: JSON.parse(open(this.opts.masterKey, sealed)) as Record<string, unknown>, bytes: sealed.length };
  }

  async put(accountId: string, id: string, record: Record<string, unknown>): Promise<void> {
    const sealed = seal(this.opts.masterKey, JSON.stringify(record));
    // A record larger than the account's whole byte quota is not kept (it would push out everything else).
    if (sealed.length > this.quotas.bytes) return;
    // Written before it is indexed: an index entry always has its record until the record's TTL.
    await this.redis.set(this.prefix + keyOf(accountId, id), sealed, "PX", this.opts.ttlMs);
    const evicted = (await this.redis.eval(
      INDEX_LUA,
      2,
      ...this.index(accountId),
      "put",
      id,
      sealed.length,
      Date.now(),
      this.opts.ttlMs,
      this.quotas.count,
      this.quotas.bytes,
    )) as string[];
    if (evicted.length > 0) await this.redis.del(...evicted.map((e) => this.prefix + keyOf(accountId, e)));
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    const deleted = (await this.redis.del(this.prefix + keyOf(accountId, id))) > 0;
    await this.redis.eval(INDEX_LUA, 2, ...this.index(accountId), "del", id);
    return deleted;
  }
}
