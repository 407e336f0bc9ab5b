import { describe, expect, it } from "vitest";
import { TokenCache } from "./token-cache.ts";

// The token cache asks once per credential however many calls wait, refreshes before expiry without making
// calls wait, waits only on an expired token, and lets the next call retry after a failure.

function issuer() {
  const pending: { resolve: (t: string) => void; reject: (e: Error) => void }[] = [];
  let life = 3_600_000;
  const fetch = (now: number) => () =>
    new Promise<{ token: string; expiresAt: number }>((resolve, reject) => {
      pending.push({ resolve: (t) => resolve({ token: t, expiresAt: now + life }), reject });
    });
  return { pending, fetch, setLife: (ms: number) => void (life = ms) };
}

describe("TokenCache", () => {
  it("asks once for many concurrent calls, then serves the cached token", async () => {
    let now = 1_000_000;
    const cache = new TokenCache({ now: () => now });
    const iss = issuer();
    const calls = Array.from({ length: 50 }, () => cache.get("sa", iss.fetch(now)));
    expect(iss.pending).toHaveLength(1);
    iss.pending[0]!.resolve("t1");
    expect(new Set(await Promise.all(calls))).toEqual(new Set(["t1"]));
    now += 3_600_000 - 5 * 60_000 - 1;
    expect(await cache.get("sa", iss.fetch(now))).toBe("t1");
    expect(iss.pending).toHaveLength(1);
  });

  it("refreshes in the background within five minutes of expiry, and waits only once the token expired", async () => {
    let now = 0;
    const cache = new TokenCache({ now: () => now });
    const iss = issuer();
    const first = cache.get("sa", iss.fetch(now));
    iss.pending[0]!.resolve("t1");
    expect(await first).toBe("t1");
    now = 3_600_000 - 60_000; // a minute left
    expect(await cache.get("sa", iss.fetch(now))).toBe("t1"); // served at once…
    expect(await cache.get("sa", iss.fetch(now))).toBe("t1");
    expect(iss.pending).toHaveLength(2); // …with one refresh under way
    iss.pending[1]!.resolve("t2");
    await expect.poll(() => cache.get("sa", iss.fetch(now))).toBe("t2");
    now += 3_600_000; // t2 expired: the call waits for t3
    const waiting = cache.get("sa", iss.fetch(now));
    expect(iss.pending).toHaveLength(3);
    iss.pending[2]!.resolve("t3");
    expect(await waiting).toBe("t3");
  });

  it("throws a failed fetch to every waiting call, and the next call asks again", async () => {
    const cache = new TokenCache();
    const iss = issuer();
    const calls = [cache.get("sa", iss.fetch(Date.now())), cache.get("sa", iss.fetch(Date.now()))];
    iss.pending[0]!.reject(new Error("invalid_grant"));
    for (const c of calls) await expect(c).rejects.toThrow("invalid_grant");
    const again = cache.get("sa", iss.fetch(Date.now()));
    expect(iss.pending).toHaveLength(2);
    iss.pending[1]!.resolve("t2");
    expect(await again).toBe("t2");
  });

  it("after a failed background refresh, keeps serving the valid token and tries again only after a pause", async () => {
    let now = 0;
    const cache = new TokenCache({ now: () => now });
    const iss = issuer();
    const first = cache.get("sa", iss.fetch(now));
    iss.pending[0]!.resolve("t1");
    await first;
    now = 3_600_000 - 120_000; // two minutes left
    expect(await cache.get("sa", iss.fetch(now))).toBe("t1");
    iss.pending[1]!.reject(new Error("unavailable"));
    await expect
      .poll(async () => {
        await cache.get("sa", iss.fetch(now));
        return iss.pending.length;
      })
      .toBe(2);
    for (let i = 0; i < 20; i++) expect(await cache.get("sa", iss.fetch(now))).toBe("t1");
    expect(iss.pending).toHaveLength(2); // no call asked again within the pause
    now += 10_000;
    expect(await cache.get("sa", iss.fetch(now))).toBe("t1");
    expect(iss.pending).toHaveLength(3);
  });

  it("keeps one token per credential", async () => {
    const cache = new TokenCache();
    const a = cache.get("a", async () => ({ token: "ta", expiresAt: null }));
    const b = cache.get("b", async () => ({ token: "tb", expiresAt: null }));
    expect([await a, await b]).toEqual(["ta", "tb"]);
  });
});
