import { describe, expect, it } from "vitest";
import { GatewayError } from "../errors.ts";
import { attributionOf, headerTags } from "./attribution.ts";

describe("attributionOf", () => {
  it("reads each protocol's own fields", () => {
    expect(attributionOf("openai", { user: "u1", metadata: { team: "search", n: 3 } }, {})).toEqual({
      endUser: "u1",
      tags: ["team=search"],
    });
    expect(attributionOf("anthropic", { metadata: { user_id: "u2" } }, {})).toEqual({ endUser: "u2", tags: [] });
    expect(attributionOf("gemini", { labels: { env: "prod" } }, {})).toEqual({ endUser: null, tags: ["env=prod"] });
    expect(attributionOf("openai-responses", { user: "u3", metadata: { app: "x" } }, {})).toEqual({
      endUser: "u3",
      tags: ["app=x"],
    });
    // another protocol's field means nothing here
    expect(attributionOf("anthropic", { user: "x", labels: { a: "b" } }, {})).toEqual({ endUser: null, tags: [] });
  });

  it("keeps no NUL from the body: Postgres refuses it, and the settlement batch holding it never went in", () => {
    expect(attributionOf("openai", { user: "a\u0000b", metadata: { "k\u0000": "v\u0000" } }, {})).toEqual({
      endUser: "a\ufffdb",
      tags: ["k\ufffd=v\ufffd"],
    });
  });

  it("puts the header's tags first, without duplicates, and cuts the body's to the bounds", () => {
    const metadata = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, "v".repeat(600)]));
    const a = attributionOf("openai", { user: "u".repeat(300), metadata }, { "x-modelgate-tags": "a, k0=x ,a" });
    expect(a.tags[0]).toBe("a");
    expect(a.tags).toHaveLength(16);
    expect(a.tags.every((t) => t.length <= 128)).toBe(true);
    expect(a.endUser).toHaveLength(256);
  });
});

describe("headerTags", () => {
  it("refuses a header past its bounds, naming it", () => {
    const refuse = (v: string) => {
      try {
        headerTags({ "x-modelgate-tags": v });
      } catch (e) {
        return e instanceof GatewayError ? [e.status, e.code, e.param] : e;
      }
      return "accepted";
    };
    expect(refuse(Array.from({ length: 17 }, (_, i) => `t${i}`).join(","))).toEqual([
      400,
      "invalid_tags",
      "x-modelgate-tags",
    ]);
    expect(refuse("x".repeat(129))).toEqual([400, "invalid_tags", "x-modelgate-tags"]);
    expect(refuse("x,".repeat(600))).toEqual([400, "invalid_tags", "x-modelgate-tags"]);
    expect(refuse(Array.from({ length: 16 }, (_, i) => `t${i}`).join(","))).toBe("accepted");
    expect(headerTags({})).toEqual([]);
  });
});
