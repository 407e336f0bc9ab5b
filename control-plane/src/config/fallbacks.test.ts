import { describe, expect, it } from "vitest";
import { parseConfig } from "./load.ts";

const config = (fallbacks: unknown) =>
  JSON.stringify({
    upstreams: [{ name: "u", protocol: "openai", baseUrl: "http://h/v1" }],
    models: [
      {
        id: "main-2025-01-01",
        price: { input: 1, output: 2 },
        routes: [{ upstream: "u", model: "m" }],
        ...(fallbacks === undefined ? {} : { fallbacks }),
      },
    ],
  });

describe("a model's fallbacks in the config file", () => {
  it("are none by default and read in order, naming models the file may not declare", () => {
    expect(parseConfig(config(undefined)).models[0]!.fallbacks).toEqual([]);
    expect(parseConfig(config(["b-2025-01-01", "a-2025-01-01"])).models[0]!.fallbacks).toEqual([
      "b-2025-01-01",
      "a-2025-01-01",
    ]);
  });
  it("refuse the model itself, a name twice, an empty name and more than 10", () => {
    expect(() => parseConfig(config(["main-2025-01-01"]))).toThrow(/main-2025-01-01 names itself as a fallback/);
    expect(() => parseConfig(config(["a-2025-01-01", "a-2025-01-01"]))).toThrow(/names a fallback twice/);
    expect(() => parseConfig(config([""]))).toThrow(/fallbacks/);
    expect(() => parseConfig(config(Array.from({ length: 11 }, (_, i) => `m${i}-2025-01-01`)))).toThrow(/fallbacks/);
  });
});
