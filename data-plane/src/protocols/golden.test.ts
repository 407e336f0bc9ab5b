// Golden fixtures for every translator direction, one suite for all of them:
//   requests/<case>.client.<p>.json   → <case>.canonical.json → <case>.to-<upstream>.json
//   responses/<case>.upstream.<p>.json → <case>.canonical.json → <case>.to-<client>.json
//   streams/<case>.<p>.sse (recorded vendor bytes) → <case>.events.json → <case>.to-<client>.sse
// Expected files are reviewed by hand; UPDATE_GOLDEN=1 rewrites them after a deliberate change.

import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { GatewayError } from "../errors.ts";
import { type CanonicalStreamEvent, type ProtocolName, protocols } from "./index.ts";

const ROOT = join(import.meta.dirname, "../../../test/fixtures/protocols");
const UPDATE = process.env.UPDATE_GOLDEN === "1";
const NAMES: ProtocolName[] = ["openai", "anthropic", "gemini"];
const CTX = { model: "acme-chat-2025-01-01", requestId: "req_123" };
// 2025-01-01T00:00:00Z: Anthropic and Gemini answers carry no timestamp, so the gateway stamps one.
const NOW = 1735689600;

// Cases are translated while the suite is collected, so the clock is fixed at load time.
vi.useFakeTimers({ now: NOW * 1000 });
afterAll(() => {
  vi.useRealTimers();
});

function golden(file: string, actual: string): void {
  const path = join(ROOT, file);
  if (UPDATE) {
    writeFileSync(path, actual);
    return;
  }
  expect(actual).toBe(readFileSync(path, "utf8"));
}

const json = (v: unknown): string => `${JSON.stringify(v, null, 2)}\n`;
const readJson = (file: string): unknown => JSON.parse(readFileSync(join(ROOT, file), "utf8"));
const errorJson = (e: unknown) => {
  if (!(e instanceof GatewayError)) throw e;
  return { error: { status: e.status, kind: e.kind, code: e.code, param: e.param, message: e.message } };
};
const eventJson = (ev: CanonicalStreamEvent) =>
  ev.type === "error"
    ? {
        type: "error",
        error: { status: ev.error.status, kind: ev.error.kind, code: ev.error.code, message: ev.error.message },
      }
    : ev;

const cases = (dir: string, re: RegExp) =>
  readdirSync(join(ROOT, dir))
    .map((f) => re.exec(f))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ file: m[0], name: m[1] ?? "", protocol: m[2] as ProtocolName }));

describe("requests: client → canonical → upstream", () => {
  for (const c of cases("requests", /^(.+)\.client\.(openai|anthropic|gemini)\.json$/)) {
    describe(c.name, () => {
      const body = readJson(`requests/${c.file}`);
      const route = c.protocol === "gemini" ? { model: "models/acme-chat-2025-01-01", stream: false } : {};
      const canonical = protocols[c.protocol].parseClientRequest(body, route);
      it("parses to canonical", () => golden(`requests/${c.name}.canonical.json`, json(canonical)));
      for (const up of NAMES) {
        it(`builds the ${up} upstream request`, () => {
          let out: unknown;
          try {
            out = protocols[up].buildUpstreamRequest(canonical, `${up}-upstream-model`, { stream: canonical.stream });
          } catch (e) {
            out = errorJson(e);
          }
          golden(`requests/${c.name}.to-${up}.json`, json(out));
        });
      }
    });
  }
});

describe("responses: upstream → canonical → client", () => {
  for (const c of cases("responses", /^(.+)\.upstream\.(openai|anthropic|gemini)\.json$/)) {
    describe(c.name, () => {
      const canonical = protocols[c.protocol].parseUpstreamResponse(readJson(`responses/${c.file}`));
      it("parses to canonical", () => golden(`responses/${c.name}.canonical.json`, json(canonical)));
      for (const client of NAMES) {
        it(`renders for a ${client} client`, () =>
          golden(
            `responses/${c.name}.to-${client}.json`,
            json(protocols[client].renderClientResponse(canonical, CTX)),
          ));
      }
    });
  }
});

/** Feeds the recorded bytes in small slices, so events, lines and UTF-8 sequences are cut everywhere. */
function decode(protocol: ProtocolName, bytes: Uint8Array, slice: number): CanonicalStreamEvent[] {
  const decoder = protocols[protocol].createUpstreamStreamDecoder();
  const events: CanonicalStreamEvent[] = [];
  for (let i = 0; i < bytes.length; i += slice) events.push(...decoder.push(bytes.subarray(i, i + slice)));
  events.push(...decoder.end());
  return events;
}

describe("streams: upstream SSE → canonical events → client SSE", () => {
  for (const c of cases("streams", /^(.+)\.(openai|anthropic|gemini)\.sse$/)) {
    describe(c.name, () => {
      const bytes = readFileSync(join(ROOT, "streams", c.file));
      const events = decode(c.protocol, bytes, bytes.length);
      it("decodes to canonical events", () => golden(`streams/${c.name}.events.json`, json(events.map(eventJson))));
      it("decodes the same whatever the chunking", () => {
        for (const slice of [1, 3, 7, 64])
          expect(decode(c.protocol, bytes, slice).map(eventJson)).toEqual(events.map(eventJson));
      });
      for (const client of NAMES) {
        it(`encodes for a ${client} client`, () => {
          const enc = protocols[client].createClientStreamEncoder({ ...CTX, includeUsage: true });
          golden(`streams/${c.name}.to-${client}.sse`, events.map((e) => enc.encode(e)).join(""));
        });
        it(`gives a ${client} client the same text, calls and finish (decoded back)`, () => {
          const enc = protocols[client].createClientStreamEncoder({ ...CTX, includeUsage: true });
          const wire = events.map((e) => enc.encode(e)).join("");
          const again = decode(client, new TextEncoder().encode(wire), 5);
          expect(summary(again)).toEqual(summary(events));
        });
      }
    });
  }
});

/** What a client must end up with, independent of framing and of how fragments were split. */
function summary(events: CanonicalStreamEvent[]) {
  let text = "";
  let thinking = "";
  const calls: Record<number, { name: string; args: unknown }> = {};
  const args: Record<number, string> = {};
  let finish: string | undefined;
  let error: string | undefined;
  for (const e of events) {
    if (e.type === "text") text += e.text;
    else if (e.type === "thinking") thinking += e.text;
    else if (e.type === "tool_call_start") {
      calls[e.index] = { name: e.name, args: undefined };
      args[e.index] = "";
    } else if (e.type === "tool_call_delta") args[e.index] += e.arguments;
    else if (e.type === "finish") finish = e.reason;
    else if (e.type === "error") error = e.error.kind;
  }
  for (const [i, a] of Object.entries(args)) {
    const call = calls[Number(i)];
    if (call) call.args = JSON.parse(a === "" ? "{}" : a);
  }
  return { text, thinking, calls, finish, error };
}

// Prompt-cache usage for a Responses API client (input_tokens includes input_tokens_details.cached_tokens,
// output_tokens includes output_tokens_details.reasoning_tokens; cache writes are in input_tokens).
describe("prompt-cache usage for a Responses API client", () => {
  const responses = protocols["openai-responses"];
  for (const c of cases("responses", /^(.+-cache)\.upstream\.(openai|anthropic|gemini)\.json$/)) {
    it(`${c.name}: renders for a Responses client`, () => {
      const canonical = protocols[c.protocol].parseUpstreamResponse(readJson(`responses/${c.file}`));
      golden(`responses/${c.name}.to-openai-responses.json`, json(responses.renderClientResponse(canonical, CTX)));
    });
  }
  // A Responses upstream: input_tokens includes cached_tokens, output_tokens includes reasoning_tokens.
  describe("responses-cache (Responses upstream)", () => {
    const canonical = responses.parseUpstreamResponse(
      readJson("responses/responses-cache.upstream.openai-responses.json"),
    );
    it("parses to canonical", () => golden("responses/responses-cache.canonical.json", json(canonical)));
    for (const client of [...NAMES, "openai-responses" as const]) {
      it(`renders for a ${client} client`, () =>
        golden(
          `responses/responses-cache.to-${client}.json`,
          json(protocols[client].renderClientResponse(canonical, CTX)),
        ));
    }
  });
  for (const c of cases("streams", /^(.+-cache)\.(openai|anthropic|gemini)\.sse$/)) {
    it(`${c.name}: encodes for a Responses client`, async () => {
      const bytes = readFileSync(join(ROOT, "streams", c.file));
      const enc = responses.createClientStreamEncoder({ ...CTX, includeUsage: true });
      // response.completed, with the usage, is held until close() (the response may have to be stored first).
      const wire =
        decode(c.protocol, bytes, bytes.length)
          .map((e) => enc.encode(e))
          .join("") + ((await enc.close?.()) ?? "");
      golden(`streams/${c.name}.to-openai-responses.sse`, wire);
    });
  }
});
