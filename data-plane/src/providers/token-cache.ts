// Bearer tokens a provider obtains for the gateway (Vertex's OAuth2 access tokens, Azure's Entra ID tokens):
// one per credential, kept until shortly before it expires, and asked for once however many calls want it at
// the same moment (the first call's request is the one every other call waits on). A token nearing its end is
// still used while its replacement is fetched, so calls do not wait on a refresh; only an expired (or first)
// token makes them wait.

export interface IssuedToken {
  token: string;
  /** epoch milliseconds; null when the issuer did not say (kept for `fallbackLifetimeMs`) */
  expiresAt: number | null;
}

export interface TokenCacheOptions {
  /** fetch a new token before this much of its life is left */
  refreshBeforeMs?: number;
  /** how long a token without an expiry is kept */
  fallbackLifetimeMs?: number;
  /** the clock (tests move it) */
  now?: () => number;
}

interface Entry {
  token: string | null;
  expiresAt: number;
  inflight: Promise<string> | null;
  /** when a background refresh failed: the next one waits a moment (the token still works meanwhile) */
  failedAt: number;
}

/** How long a failed background refresh waits before the next, while the token it would replace is valid. */
const BACKGROUND_RETRY_MS = 10_000;

export class TokenCache {
  private readonly entries = new Map<string, Entry>();
  private readonly refreshBeforeMs: number;
  private readonly fallbackLifetimeMs: number;
  private readonly now: () => number;

  constructor(o: TokenCacheOptions = {}) {
    this.refreshBeforeMs = o.refreshBeforeMs ?? 5 * 60_000;
    this.fallbackLifetimeMs = o.fallbackLifetimeMs ?? 10 * 60_000;
    this.now = o.now ?? Date.now;
  }

  /**
   * The token for credential `key`, fetched with `fetch` when there is none, it expired, or it is about to
   * (in the background then). A failed fetch is thrown to every call waiting on it, and the next call tries
   * again.
   */
  get(key: string, fetch: () => Promise<IssuedToken>): Promise<string> {
    let e = this.entries.get(key);
    if (e === undefined) {
      // Credentials are few (one per upstream): the map stays small, but a key rotation must not grow it forever.
      if (this.entries.size >= 100) this.entries.clear();
      e = { token: null, expiresAt: 0, inflight: null, failedAt: -Infinity };
      this.entries.set(key, e);
    }
    const left = e.expiresAt - this.now();
    if (e.token !== null && left > this.refreshBeforeMs) return Promise.resolve(e.token);
    if (e.token !== null && left > 0) {
      // Still valid: this call goes on with it while one refresh runs; a failed one is tried again shortly,
      // not by every call (the token endpoint would be asked as often as the gateway is).
      if (e.inflight === null && this.now() - e.failedAt >= BACKGROUND_RETRY_MS) {
        this.refresh(e, fetch).catch(() => undefined);
      }
      return Promise.resolve(e.token);
    }
    return e.inflight ?? this.refresh(e, fetch);
  }

  private refresh(e: Entry, fetch: () => Promise<IssuedToken>): Promise<string> {
    const p = (async () => {
      try {
        const issued = await fetch();
        e.token = issued.token;
        e.expiresAt = issued.expiresAt ?? this.now() + this.fallbackLifetimeMs;
        e.failedAt = -Infinity;
        return issued.token;
      } catch (err) {
        e.failedAt = this.now(); // before the refresh is over: no call in between starts another
        throw err;
      } finally {
        e.inflight = null;
      }
    })();
    e.inflight = p;
    return p;
  }

  /** Forgets every token: the next call of each credential asks for a new one. */
  clear(): void {
    this.entries.clear();
  }
}
