import { readFileSync } from "node:fs";
import { OPERATOR_PROTOCOLS, PROVIDERS, enumName } from "@modelgate/data-plane";
import { describe, expect, it } from "vitest";
import { checkUpstreamShape, routeProtocol } from "./upstream-provider.ts";

// The protocol and provider names are one list (data-plane/src/contract/protocols.ts, providers/index.ts); the
// Prisma enum and the printed GraphQL schema are the two places that cannot import it.
describe("protocol and provider names", () => {
  it("the Prisma enum of protocols is the operator protocols' list", () => {
    const prisma = readFileSync(new URL("../../../prisma/schema.prisma", import.meta.url), "utf8");
    const body = /enum UpstreamProtocol \{([^}]*)\}/.exec(prisma)![1]!;
    const mapped = body
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l !== "")
      .map((l) => /@map\("([^"]+)"\)/.exec(l)?.[1] ?? l.split(/\s+/)[0]);
    expect(mapped).toEqual([...OPERATOR_PROTOCOLS]);
  });
  it("the printed GraphQL schema lists every protocol and provider", () => {
    const sdl = readFileSync(new URL("../../schema.graphql", import.meta.url), "utf8");
    const values = (name: string) =>
      new RegExp(`enum ${name} \\{([^}]*)\\}`)
        .exec(sdl)![1]!
        .split("\n")
        .map((l) => l.trim())
        .filter((l) => /^[a-z_]+$/.test(l));
    expect(values("UpstreamProtocol").sort()).toEqual(OPERATOR_PROTOCOLS.map(enumName).sort());
    expect(values("UpstreamProvider").sort()).toEqual(PROVIDERS.map(enumName).sort());
  });
});

describe("an upstream's shape", () => {
  it("a direct upstream needs its protocol and base URL", () => {
    expect(checkUpstreamShape({ provider: "direct", protocol: null, baseUrl: "http://h", options: {} })).toEqual({
      problem: "an upstream without a provider needs its protocol",
      field: "protocol",
    });
    expect(checkUpstreamShape({ provider: "direct", protocol: "openai", baseUrl: null, options: {} })).toEqual({
      problem: "provider direct needs a baseUrl",
      field: "baseUrl",
    });
    expect(checkUpstreamShape({ provider: "direct", protocol: "gemini", baseUrl: "http://h", options: {} })).toEqual({
      baseUrl: "http://h",
    });
  });
  it("a direct route speaks its upstream's protocol; an unknown provider is refused", () => {
    expect(routeProtocol("direct", "anthropic", "claude-x")).toBe("anthropic");
    expect(() => routeProtocol("nope", "openai", "m")).toThrow("unknown provider nope");
  });
});
