import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ATTRIBUTION_LIMITS,
  DROPPED_LIMITS,
  clientProtocolSchema,
  plainUsageEvent,
  readUsageEvent,
  usageEntryEvents,
  usageEventSchema,
} from "./usage.ts";

describe("usageEntryEvents", () => {
  it("reads a turn's events, and the older one-event entries", () => {
    expect(usageEntryEvents(["events", JSON.stringify([{ requestId: "a" }, { requestId: "b" }])])).toEqual([
      { requestId: "a" },
      { requestId: "b" },
    ]);
    expect(usageEntryEvents(["event", JSON.stringify({ requestId: "c" })])).toEqual([{ requestId: "c" }]);
    expect(usageEntryEvents(["other", "x", "events", "[]"])).toEqual([]);
  });

  it("answers null for an entry it cannot read", () => {
    expect(usageEntryEvents(["events", "{not json"])).toBeNull();
    expect(usageEntryEvents(["events", JSON.stringify({ requestId: "a" })])).toBeNull();
    expect(usageEntryEvents(["something", "else"])).toBeNull();
    expect(usageEntryEvents([])).toBeNull();
  });
});

describe("readUsageEvent", () => {
  const text = (max = 300) =>
    fc.oneof(fc.string({ maxLength: max }), fc.constantFrom("", "-1", "007", "1.25", "1.255", "-0", "1e3", " 1"));
  const count = fc.oneof(
    fc.nat(),
    fc.constantFrom(-0, -1, 1.5, 2 ** 53, Number.MAX_SAFE_INTEGER, NaN, Infinity, -Infinity),
  );
  const price = fc.oneof(fc.stringMatching(/^-?\d{1,9}(\.\d{1,3})?$/), text(12));
  const fields = {
    requestId: fc.string({ minLength: 1 }),
    keyId: fc.uuid(),
    accountId: fc.uuid(),
    model: fc.string(),
    protocol: fc.constantFrom(...clientProtocolSchema.options),
    upstream: fc.option(fc.string()),
    stream: fc.boolean(),
    promptTokens: fc.nat(),
    completionTokens: fc.nat(),
    reasoningTokens: fc.nat(),
    cachedTokens: fc.nat(),
    cost: fc.bigInt({ min: 0n, max: 10n ** 18n - 1n }).map(String),
    status: fc.integer({ min: 100, max: 599 }),
    errorCode: fc.option(fc.string()),
    latencyMs: fc.nat(),
    ttftMs: fc.option(fc.nat()),
    clientIp: fc.option(fc.string()),
    startedAt: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
    cacheWrite5mTokens: fc.nat(),
    cacheWrite1hTokens: fc.nat(),
    prices: fc.option(
      fc.record({
        input: fc.stringMatching(/^\d{1,9}(\.\d{1,2})?$/),
        cachedInput: fc.stringMatching(/^\d{1,9}(\.\d{1,2})?$/),
        cacheWrite5m: fc.stringMatching(/^\d{1,9}(\.\d{1,2})?$/),
        cacheWrite1h: fc.stringMatching(/^\d{1,9}(\.\d{1,2})?$/),
        output: fc.stringMatching(/^\d{1,9}(\.\d{1,2})?$/),
      }),
    ),
    estimated: fc.boolean(),
    endUser: fc.option(fc.string({ maxLength: ATTRIBUTION_LIMITS.endUserChars })),
    tags: fc.array(fc.string({ maxLength: ATTRIBUTION_LIMITS.tagChars }), { maxLength: ATTRIBUTION_LIMITS.tags }),
    dropped: fc.array(fc.string({ maxLength: DROPPED_LIMITS.nameChars }), { maxLength: DROPPED_LIMITS.names }),
    maybeSettled: fc.boolean(),
  };
  // the fields added later may be absent (older replicas): the defaults apply
  const valid = fc.record(fields, { requiredKeys: Object.keys(fields).slice(0, 18) as (keyof typeof fields)[] });
  // values a field might hold instead: other types, the bounds, near misses of the formats
  const edge = fc.constantFrom<unknown>(
    ...[null, undefined, true, false, 0, -0, -1, 1.5, 2 ** 53, Number.MAX_SAFE_INTEGER, NaN, Infinity, -Infinity],
    ...[
      "",
      "x",
      "-1",
      "-0",
      "-1000000000",
      "1000000000000000000",
      "007",
      "1.25",
      "1.255",
      "1e3",
      " 1",
      "1.",
      "openai",
      "x".repeat(128),
      "x".repeat(129),
    ],
    ...["x".repeat(256), "x".repeat(257), [], {}, ["a"], [1], [null], ["x".repeat(129)], Array(16).fill("t")],
    ...[Array(17).fill("t"), { input: "1", cachedInput: "1", cacheWrite5m: "1", cacheWrite1h: "1", output: "1" }],
  );
  const anyValue = fc.oneof(edge, count, text(), price, fc.array(text(130), { maxLength: 18 }), fc.jsonValue());
  const keys = fc.constantFrom(...Object.keys(usageEventSchema.shape), "extra", "__proto__");
  const priceKeys = fc.constantFrom("input", "cachedInput", "cacheWrite5m", "cacheWrite1h", "output", "extra");
  // a valid event with one field changed or removed, a price changed, or a tag added
  const nearlyValid = fc
    .tuple(
      valid,
      fc.oneof(
        fc.record({ key: keys, value: fc.oneof({ weight: 4, arbitrary: edge }, anyValue, fc.constant("delete")) }),
        fc.record({ price: priceKeys, value: fc.oneof({ weight: 3, arbitrary: edge }, anyValue) }),
        fc.record({ tag: fc.oneof({ weight: 3, arbitrary: edge }, anyValue) }),
      ),
    )
    .map(([e, change]) => {
      const x: Record<string, unknown> = JSON.parse(JSON.stringify(e));
      if ("key" in change) {
        if (change.value === "delete") delete x[change.key];
        else Object.defineProperty(x, change.key, { value: change.value, enumerable: true, writable: true });
      } else if ("price" in change) {
        if (x.prices !== null && typeof x.prices === "object")
          (x.prices as Record<string, unknown>)[change.price] = change.value;
      } else if (Array.isArray(x.tags)) x.tags = [...(x.tags as unknown[]), change.tag];
      return x;
    });

  it("answers what the schema answers, for valid events and near misses alike", () => {
    fc.assert(
      fc.property(fc.oneof(valid, { weight: 8, arbitrary: nearlyValid }, anyValue), (raw) => {
        const expected = usageEventSchema.safeParse(raw);
        const plain = plainUsageEvent(raw);
        if (plain !== undefined) {
          expect(expected.success).toBe(true);
          expect(plain).toStrictEqual(expected.data);
        }
        const read = readUsageEvent(raw);
        expect(read.success).toBe(expected.success);
        if (read.success) expect(read.data).toStrictEqual(expected.data);
      }),
      { numRuns: 5_000 },
    );
  });

  it("takes the usual event without the schema, defaults included (an older replica's)", () => {
    fc.assert(
      fc.property(valid, (raw) => {
        expect(plainUsageEvent(JSON.parse(JSON.stringify(raw)))).toStrictEqual(usageEventSchema.parse(raw));
      }),
      { numRuns: 2_000 },
    );
  });

  it("refuses a negative or fractional cost or token count (the stream is an input: a negative cost was a credit)", () => {
    const [base] = fc.sample(valid, { numRuns: 1, seed: 7 });
    const ok = { ...JSON.parse(JSON.stringify(base)), cost: "1000", promptTokens: 10, completionTokens: 5 };
    expect(readUsageEvent(ok).success).toBe(true);
    const bad: Record<string, unknown>[] = [
      { cost: "-1000000000" },
      { cost: "-0" },
      { cost: "1.5" },
      { cost: "1e3" },
      { cost: "1000000000000000000" }, // past Postgres' bigint: 19 digits
      { promptTokens: -1 },
      { completionTokens: -5 },
      { reasoningTokens: 1.5 },
      { cachedTokens: -1 },
      { cacheWrite5mTokens: -1 },
      { cacheWrite1hTokens: 0.25 },
    ];
    for (const change of bad) {
      const raw = { ...ok, ...change };
      expect(readUsageEvent(raw).success, JSON.stringify(change)).toBe(false);
      expect(usageEventSchema.safeParse(raw).success, JSON.stringify(change)).toBe(false);
    }
  });

  it("knows every field of the schema (a field added to the schema must be added here too)", () => {
    const [full] = fc.sample(fc.record(fields), { numRuns: 1, seed: 1 });
    expect(Object.keys(fields)).toEqual(Object.keys(usageEventSchema.shape));
    expect(Object.keys(plainUsageEvent(full)!)).toEqual(Object.keys(usageEventSchema.shape));
  });
});
