import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import type { AccountSnapshot, ModelSnapshot } from "../contract/snapshot.ts";
import { reservationEstimate } from "../billing/reservation.ts";
import { testKey } from "../snapshot/test-fixture.ts";
import { admit, type Caller, fallbackChain } from "./admission.ts";
import type { DataPlaneOptions } from "./context.ts";
import { takeRequestFallbacks } from "./fallbacks.ts";

const req = (headers: Record<string, string> = {}) => ({ headers }) as unknown as IncomingMessage;

describe("a request's own fallbacks", () => {
  it("take `models` out of an OpenAI body, naming the first as the model when none is", () => {
    const body: Record<string, unknown> = { models: ["a-1", "b-1", "a-1"], messages: [] };
    expect(takeRequestFallbacks("openai", body, req())).toEqual({ fallbacks: ["b-1"], bodyChanged: true });
    expect(body).toEqual({ model: "a-1", messages: [] });
  });

  it("keep a model that is not the first ahead of the list, then the header's names", () => {
    const body: Record<string, unknown> = { model: "x-1", models: ["a-1", "b-1"] };
    expect(takeRequestFallbacks("openai", body, req({ "x-modelgate-fallbacks": "c-1, a-1 ,,x-1" }))).toEqual({
      fallbacks: ["a-1", "b-1", "c-1"],
      bodyChanged: true,
    });
  });

  it("leave other protocols' bodies alone and read only the header there", () => {
    const body: Record<string, unknown> = { model: "x-1", models: ["a-1"] };
    expect(takeRequestFallbacks("anthropic", body, req({ "x-modelgate-fallbacks": "b-1" }))).toEqual({
      fallbacks: ["b-1"],
      bodyChanged: false,
    });
    expect(body.models).toEqual(["a-1"]);
    expect(takeRequestFallbacks("anthropic", { model: "x-1" }, req())).toEqual({ fallbacks: [], bodyChanged: false });
  });

  it("refuse what is not a bounded list of names with 400 invalid_fallbacks", () => {
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        return (err as { code: string; status: number; param: string }).param;
      }
      return "accepted";
    };
    const six = ["a", "b", "c", "d", "e", "f"];
    expect(code(() => takeRequestFallbacks("openai", { models: six }, req()))).toBe("models");
    expect(code(() => takeRequestFallbacks("openai", { models: "a" }, req()))).toBe("models");
    expect(code(() => takeRequestFallbacks("openai", { models: [] }, req()))).toBe("models");
    expect(code(() => takeRequestFallbacks("openai", { models: ["a", 3] }, req()))).toBe("models[1]");
    expect(code(() => takeRequestFallbacks("openai", { models: ["x".repeat(201)] }, req()))).toBe("models[0]");
    expect(code(() => takeRequestFallbacks("gemini", {}, req({ "x-modelgate-fallbacks": six.join(",") })))).toBe(
      "x-modelgate-fallbacks",
    );
    expect(code(() => takeRequestFallbacks("openai", { models: ["a", "b", "c", "d", "e"] }, req()))).toBe("accepted");
  });
});

const model = (id: string, input: string, over: Partial<ModelSnapshot> = {}): ModelSnapshot => ({
  id,
  displayName: null,
  reasoning: false,
  // micro-units per 1M tokens: `input` whole units
  price: { input: `${input}000000`, output: `${input}000000`, cachedInput: null },
  routes: [],
  createdAt: "2025-01-01T00:00:00.000Z",
  ...over,
});
const account: AccountSnapshot = {
  id: "a1",
  name: "Acme",
  status: "active",
  balance: "1000000000",
  limits: { rpm: null, tpm: null, concurrency: null },
  contracts: {},
};

describe("the fallback chain at admission", () => {
  const models = new Map(
    [
      model("main-1", "1", { fallbacks: ["dear-1", "main-1", "secret-1", "gone-1", "emb-1"] }),
      model("dear-1", "50"),
      model("cheap-1", "2"),
      model("secret-1", "1"),
      model("emb-1", "1", { type: "embedding" }),
    ].map((m) => [m.id, m]),
  );
  const reserved: bigint[] = [];
  const opts = {
    store: { model: (id: string) => models.get(id) },
    spend: {
      get: () => ({ keySpent: 0n, accountSpent: 0n }),
      reserve: (_k: unknown, _a: unknown, micro: bigint) => {
        reserved.push(micro);
        return { ok: true, reservation: undefined };
      },
    },
    rateLimiter: {
      acquire: async () => ({ ok: true, info: { requests: null, tokens: null }, cancel: async () => undefined }),
    },
  } as unknown as DataPlaneOptions;
  const caller: Caller = {
    key: testKey({ allowedModels: ["main-1", "dear-1", "cheap-1", "emb-1"] }),
    account,
    clientIp: null,
  };

  it("is the request's fallbacks then the model's, each once, only models the key may call, of the same kind", () => {
    const chain = fallbackChain(opts, caller, models.get("main-1")!, ["cheap-1", "secret-1", "dear-1"]);
    expect(chain.map((m) => m.id)).toEqual(["cheap-1", "dear-1"]);
    expect(fallbackChain(opts, caller, models.get("dear-1")!, []).map((m) => m.id)).toEqual([]);
  });

  it("reserves at the dearest model that may serve", async () => {
    reserved.length = 0;
    const a = await admit(opts, caller, "main-1", 1000, Date.now(), undefined, "chat", 100);
    expect(a.fallbacks.map((m) => m.id)).toEqual(["dear-1"]);
    expect(a.price.input).toBe("1000000"); // the model named serves until a fallback takes over
    expect(reserved).toEqual([reservationEstimate(models.get("dear-1")!.price, 1000, 100)]);
    expect(reserved[0]).toBeGreaterThan(reservationEstimate(models.get("main-1")!.price, 1000, 100));
  });
});
