import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { POLICY_SHARDS, shardOf, type PolicyChange, type RedisNames } from "@modelgate/data-plane";
import type { FeedHead, FullWriter, PolicyBus } from "./publisher.ts";

// Appends changes to the current epoch in one script per chunk: each change writes its entity into its shard
// (unless the shard holds a newer version) and adds one stream entry numbered seq+1; then the head moves. The
// script compares the head first, so two control planes never interleave older data after newer.
const APPEND = `
local m = redis.call('HMGET', KEYS[1], 'epoch', 'cursor', 'seq', 'lastId', 'version')
if m[1] ~= ARGV[1] or m[2] ~= ARGV[2] then return -1 end
local seq = tonumber(m[3]) or 0
local last = m[4] or '0-0'
local n = (#ARGV - 7) / 4
for i = 0, n - 1 do
  local kind, id, v, json = ARGV[8 + i * 4], ARGV[9 + i * 4], ARGV[10 + i * 4], ARGV[11 + i * 4]
  local key = KEYS[3 + i]
  local cur
  if kind == 'catalog' then cur = redis.call('GET', key) else cur = redis.call('HGET', key, id) end
  local cv = cur and tonumber(string.match(cur, '^{"v":(%d+)'))
  if not cv or cv <= tonumber(v) then
    if kind == 'catalog' then redis.call('SET', key, json)
    elseif json == '' then redis.call('HDEL', key, id)
    else redis.call('HSET', key, id, json) end
    seq = seq + 1
    last = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[6], '*', 's', seq, 'k', kind, 'i', id, 'v', v, 'd', json)
  end
end
local version = math.max(tonumber(m[5]) or 0, tonumber(ARGV[4]))
redis.call('HSET', KEYS[1], 'cursor', ARGV[3], 'seq', seq, 'lastId', last, 'version', string.format('%d', version), 'at', ARGV[5])
if n > 0 then redis.call('PUBLISH', ARGV[7], seq) end
return seq`;

/**
 * The feed in Redis (see RedisNames): per epoch, keys and accounts in POLICY_SHARDS hashes each, the catalog
 * as one small value, and a change stream; the head (policyMeta) names the current epoch. Nothing here grows
 * with the key count except the number of hash fields, and a change costs Redis a few microseconds.
 */
export class RedisPolicyBus implements PolicyBus {
  constructor(
    private readonly redis: Redis,
    private readonly names: RedisNames,
    private readonly opts: { streamMaxLen?: number; chunk?: number } = {},
  ) {}

  async head(): Promise<FeedHead | null> {
    const [epoch, cursor] = await this.redis.hmget(this.names.policyMeta, "epoch", "cursor");
    return epoch && cursor ? { epoch, cursor } : null;
  }

  private keyOf(epoch: string, c: PolicyChange): string {
    return c.kind === "catalog"
      ? this.names.policyCatalog(epoch)
      : this.names.policyShard(epoch, c.kind, shardOf(c.id));
  }

  async beginFull(): Promise<FullWriter> {
    const epoch = randomBytes(6).toString("hex");
    return {
      put: async (changes) => {
        // One HSET per shard touched by the page, pipelined: a page costs Redis a few milliseconds in all.
        const byKey = new Map<string, string[]>();
        const p = this.redis.pipeline();
        for (const c of changes) {
          if (c.json === null) continue;
          if (c.kind === "catalog") {
            p.set(this.names.policyCatalog(epoch), c.json);
            continue;
          }
          const key = this.keyOf(epoch, c);
          const fields = byKey.get(key);
          if (fields) fields.push(c.id, c.json);
          else byKey.set(key, [c.id, c.json]);
        }
        for (const [key, fields] of byKey) p.hset(key, ...fields);
        const results = await p.exec();
        const failed = results?.find(([err]) => err);
        if (failed) throw failed[0];
      },
      commit: async (cursor, version) => {
        const old = await this.redis.hget(this.names.policyMeta, "epoch");
        await this.redis
          .multi()
          .del(this.names.policyMeta)
          .hset(this.names.policyMeta, { epoch, cursor, seq: 0, lastId: "0-0", version, at: Date.now() })
          .publish(this.names.policyChannel, "0")
          .exec();
        // The old epoch stays readable a while for a replica in the middle of loading it, then goes.
        if (old && old !== epoch) {
          const p = this.redis.pipeline();
          for (let s = 0; s < POLICY_SHARDS; s++) {
            p.expire(this.names.policyShard(old, "key", s), 120);
            p.expire(this.names.policyShard(old, "account", s), 120);
          }
          p.expire(this.names.policyCatalog(old), 120);
          p.expire(this.names.policyStream(old), 120);
          await p.exec();
        }
      },
    };
  }

  async append(
    from: FeedHead,
    changes: PolicyChange[],
    cursor: string,
    version: number,
    publishedAt = Date.now(),
  ): Promise<boolean> {
    const chunk = this.opts.chunk ?? 100;
    const maxLen = String(this.opts.streamMaxLen ?? 100_000);
    let at = 0;
    do {
      const part = changes.slice(at, at + chunk);
      at += chunk;
      const last = at >= changes.length;
      const args: string[] = [
        from.epoch,
        from.cursor,
        last ? cursor : from.cursor,
        String(last ? version : 0),
        String(publishedAt),
        maxLen,
        this.names.policyChannel,
      ];
      for (const c of part) args.push(c.kind, c.id, String(c.v), c.json ?? "");
      const keys = [
        this.names.policyMeta,
        this.names.policyStream(from.epoch),
        ...part.map((c) => this.keyOf(from.epoch, c)),
      ];
      const seq = Number(await this.redis.eval(APPEND, keys.length, ...keys, ...args));
      if (seq < 0) return false;
    } while (at < changes.length);
    return true;
  }
}
