import { describe, expect, it } from "vitest";
import type { CanonicalRequest } from "./canonical.ts";
import { type ParamTable, readParams, writeParams } from "./params.ts";

interface Body {
  temperature?: number | null;
  top_p?: number;
  stop?: string | string[] | null;
  effort?: string;
}

const TABLE: ParamTable<Body> = {
  stop: { name: "stop", read: (b) => (typeof b.stop === "string" ? [b.stop] : b.stop) },
  temperature: "temperature",
  topP: "top_p",
  reasoning: {
    name: "reasoning_effort",
    read: (b) => (b.effort === undefined ? undefined : { enabled: true }),
    write: false,
  },
  n: { name: "n", write: false },
};

const request = (): CanonicalRequest => ({ model: "m", system: [], messages: [], stream: false });

describe("parameter tables", () => {
  it("read a client's body: a null or absent parameter is none, a row's reader converts", () => {
    const req = request();
    readParams(TABLE, { temperature: null, top_p: 0.5, stop: "END" }, req);
    expect(req).toEqual({ ...request(), topP: 0.5, stop: ["END"] });
    expect("temperature" in req).toBe(false);
  });

  it("write an upstream's body in the table's order, the builder's parameters from what it gives", () => {
    const req: CanonicalRequest = {
      ...request(),
      temperature: 0,
      topP: 1,
      stop: ["x"],
      n: 2,
      reasoning: { enabled: true },
    };
    const body: Record<string, unknown> = {};
    writeParams(TABLE, req, body, { reasoning: "high" });
    expect(Object.entries(body)).toEqual([
      ["stop", ["x"]],
      ["temperature", 0],
      ["top_p", 1],
      ["reasoning_effort", "high"],
    ]);
  });

  it("write nothing for a parameter the request does not have or the builder does not give", () => {
    const body: Record<string, unknown> = {};
    writeParams(TABLE, { ...request(), reasoning: { enabled: false } }, body, {});
    expect(body).toEqual({});
  });
});
