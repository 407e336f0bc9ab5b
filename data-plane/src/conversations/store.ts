// Where the Responses API's stored responses live when the operator turns storing on
// (MODELGATE_RESPONSES_STORE=1): Redis in distributed mode (every replica, and a restarted one, finds them),
// process memory in embedded mode. Each record is sealed with the master key (AES-256-GCM) and keyed by
// account, so one account can never read another's; records expire after a TTL.

import type { Redis } from "ioredis";
import { open, seal } from "../crypto/secret-box.ts";
import type { ConversationStore } from "../protocols/index.ts";

export interface ConversationStoreOptions {
  masterKey: Buffer;
  ttlMs: number;
}

const keyOf = (accountId: string, id: string) => `${accountId}:${id}`;

export class MemoryConversationStore implements ConversationStore {
  private readonly records = new Map<string, { expires: number; sealed: string }>();
  constructor(
    private readonly opts: ConversationStoreOptions,
    /** the oldest records go first beyond this many */
    private readonly maxRecords = 10_000,
  ) {}

  async get(accountId: string, id: string): Promise<{ record: Record<string, unknown>; bytes: number } | null> {
    const key = keyOf(accountId, id);
    const r = this.records.get(key);
    if (!r) return null;
    if (r.expires <= Date.now()) {
      this.records.delete(key);
      return null;
    }
    return {
      record: JSON.parse(open(this.opts.masterKey, r.sealed)) as Record<string, unknown>,
      bytes: r.sealed.length,
    };
  }

  async put(accountId: string, id: string, record: Record<string, unknown>): Promise<void> {
    const key = keyOf(accountId, id);
    this.records.delete(key);
    this.records.set(key, {
      expires: Date.now() + this.opts.ttlMs,
      sealed: seal(this.opts.masterKey, JSON.stringify(record)),
    });
    while (this.records.size > this.maxRecords) this.records.delete(this.records.keys().next().value!);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return this.records.delete(keyOf(accountId, id));
  }
}

export class RedisConversationStore implements ConversationStore {
  constructor(
    private readonly redis: Redis,
    /** e.g. `modelgate:responses:` */
    private readonly prefix: string,
    private readonly opts: ConversationStoreOptions,
  ) {}

  async get(accountId: string, id: string): Promise<{ record: Record<string, unknown>; bytes: number } | null> {
    const sealed = await this.redis.get(this.prefix + keyOf(accountId, id));
    return sealed === null
      ? null
      : { record: JSON.parse(open(this.opts.masterKey, sealed)) as Record<string, unknown>, bytes: sealed.length };
  }

  async put(accountId: string, id: string, record: Record<string, unknown>): Promise<void> {
    await this.redis.set(
      this.prefix + keyOf(accountId, id),
      seal(this.opts.masterKey, JSON.stringify(record)),
      "PX",
      this.opts.ttlMs,
    );
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return (await this.redis.del(this.prefix + keyOf(accountId, id))) > 0;
  }
}
