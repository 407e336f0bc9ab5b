import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GatewayError } from "../errors.ts";
import {
  PROTOCOL_NAMES,
  TRANSLATION_ROWS,
  Translation,
  directionTable,
  dispositionOf,
  renderTranslationDocs,
} from "./translation.ts";

// The translation table (issue 26): complete in every direction, read the way the translators read it, and the
// source of docs/protocols.md's tables (UPDATE_DOCS=1 rewrites the section after a deliberate change).

const DOC = join(import.meta.dirname, "../../../docs/protocols.md");
const START = "<!-- translation-table:start (generated from data-plane/src/protocols/translation.ts) -->";
const END = "<!-- translation-table:end -->";
/** Markdown tables as prettier lays them out and as generated compare equal: cell padding aside. */
const normal = (md: string) =>
  md
    .split("\n")
    .map((l) => l.replace(/ +/g, " ").replace(/-{3,}/g, "---").trim())
    .filter((l) => l !== "")
    .join("\n");

describe("the translation table", () => {
  it("says, for every parameter, what becomes of it toward each other protocol", () => {
    for (const row of TRANSLATION_ROWS)
      for (const up of PROTOCOL_NAMES)
        if (up !== row.client) expect(row.toward[up], `${row.client} ${row.param} → ${up}`).toBeDefined();
    const seen = new Set(TRANSLATION_ROWS.map((r) => `${r.client} ${r.param}`));
    expect(seen.size).toBe(TRANSLATION_ROWS.length);
  });

  it("has a table per direction, and none for a protocol toward itself (it passes through)", () => {
    expect(directionTable("anthropic", "anthropic")).toEqual([]);
    expect(directionTable("anthropic", "openai")).toContainEqual({
      param: "context_management",
      disposition: { kind: "drop" },
    });
    expect(dispositionOf("gemini", "generationConfig.topK", "openai").kind).toBe("drop");
    expect(dispositionOf("gemini", "generationConfig.topK", "anthropic").kind).toBe("translate");
    expect(dispositionOf("openai", "logit_bias", "gemini").kind).toBe("refuse");
    // A parameter the table does not list is a hint: dropped and named.
    expect(dispositionOf("openai", "some_future_field", "anthropic")).toEqual({ kind: "drop" });
  });

  it("lists a client's unknown keys so that neither a header nor settlement can choke on them, 32 at most", () => {
    // Found by the protocol fuzz test: a key holding NUL reached the usage row, Postgres refused the batch, and
    // embedded settlement retried it for ever (the server never finished its shutdown).
    const t = new Translation("openai", "anthropic");
    t.unknown("a\u0000b");
    t.unknown("x,y\r\nz");
    t.unknown("caf\u00e9");
    t.unknown("k".repeat(5000));
    expect(t.dropped).toEqual(["a?b", "x?y??z", "caf?", "k".repeat(128)]);
    for (let i = 0; i < 40; i++) t.unknown(`field_${i}`);
    const listed = t.result().dropped!;
    expect(listed).toHaveLength(33);
    expect(listed.at(-1)).toBe("(+12 more)");
    expect(listed.every((n) => /^[\x20-\x7e]{1,128}$/.test(n) && !n.includes(","))).toBe(true);
    // a refusal names the key the same way
    let err: unknown;
    try {
      new Translation("openai", "anthropic", true).unknown("bad\u0000key");
    } catch (e) {
      err = e;
    }
    expect((err as GatewayError).message).toContain("'bad?key'");
  });

  it("records drops and removed hosted tools by the client's name, keeps native ones, refuses the contract", () => {
    const t = new Translation("openai-responses", "openai");
    expect(t.keep("tools[]: web_search", "tools[].web_search")).toBe(false);
    expect(t.keep("tools[]: namespace")).toBe(true);
    expect(t.keep("text.verbosity")).toBe(false);
    expect(t.dropped).toEqual(["tools[].web_search", "text.verbosity"]);
    expect(new Translation("openai-responses", "anthropic").keep("tools[]: web_search")).toBe(true);
    expect(() => t.keep("background")).toThrow(GatewayError);
    // strict: what would be dropped or removed is a 400 naming it
    const strict = new Translation("gemini", "openai", true);
    let err: unknown;
    try {
      strict.keep("generationConfig.topK");
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: "unsupported_parameter", param: "generationConfig.topK" });
  });

  it("is what docs/protocols.md shows", () => {
    const doc = readFileSync(DOC, "utf8");
    const from = doc.indexOf(START);
    const to = doc.indexOf(END);
    expect(from, "docs/protocols.md lacks the translation-table markers").toBeGreaterThan(-1);
    const current = normal(doc.slice(from + START.length, to));
    const generated = normal(renderTranslationDocs());
    if (process.env.UPDATE_DOCS === "1" && current !== generated) {
      writeFileSync(
        DOC,
        `${doc.slice(0, from + START.length)}\n\n${renderTranslationDocs().trim()}\n\n${doc.slice(to)}`,
      );
      return;
    }
    expect(current, "regenerate with UPDATE_DOCS=1 npx vitest run --project unit translation.test.ts").toBe(generated);
  });
});

describe("translated by kind, end to end through the translators", () => {
  it("flattens Codex's namespace tools and maps calls back under their namespace, streamed and not", async () => {
    const { protocols } = await import("./index.ts");
    const body = {
      model: "m",
      input: "list files",
      tools: [
        {
          type: "namespace",
          name: "mcp__fs__",
          description: "files",
          tools: [{ type: "function", name: "list", parameters: { type: "object", properties: {} } }],
        },
        { type: "web_search" },
      ],
    };
    const req = protocols["openai-responses"].parseClientRequest(body);
    expect(req.tools?.map((t) => t.name)).toEqual(["mcp__fs__list"]);
    const up = protocols.anthropic.buildUpstreamRequest(req, "c", { stream: false });
    expect(up.body.tools).toEqual([
      expect.objectContaining({ name: "mcp__fs__list" }),
      { type: "web_search_20250305", name: "web_search" },
    ]);
    const chat = protocols.openai.buildUpstreamRequest(req, "o", { stream: false });
    expect(chat.dropped).toEqual(["tools[].web_search"]);
    const ctx = { model: "m", requestId: "req_0123456789abcdef01234567", request: body };
    const rendered = protocols["openai-responses"].renderClientResponse(
      {
        id: "x",
        model: "c",
        created: 1,
        content: [{ type: "tool_call", id: "call_1", name: "mcp__fs__list", arguments: "{}" }],
        finishReason: "tool_calls",
        usage: { promptTokens: 1, completionTokens: 1, reasoningTokens: 0, cachedTokens: 0 },
      },
      ctx,
    );
    expect(rendered.output).toEqual([
      expect.objectContaining({ type: "function_call", name: "list", namespace: "mcp__fs__", call_id: "call_1" }),
    ]);
    const enc = protocols["openai-responses"].createClientStreamEncoder(ctx);
    let out = enc.encode({ type: "start", id: "x", model: "c", created: 1 });
    out += enc.encode({ type: "tool_call_start", index: 0, id: "call_1", name: "mcp__fs__list" });
    out += enc.encode({ type: "tool_call_delta", index: 0, arguments: "{}" });
    out += enc.encode({ type: "finish", reason: "tool_calls" });
    out += enc.encode({ type: "end" });
    expect(out).toContain('"name":"list","namespace":"mcp__fs__"');
    expect(out).not.toContain("mcp__fs__list");
    // The call comes back in the next turn's input under its namespace, and reaches the upstream flat again.
    const next = protocols["openai-responses"].parseClientRequest({
      ...body,
      input: [
        { role: "user", content: "list files" },
        { type: "function_call", call_id: "call_1", name: "list", namespace: "mcp__fs__", arguments: "{}" },
        { type: "function_call_output", call_id: "call_1", output: "a.txt" },
      ],
    });
    expect(next.messages[1]).toMatchObject({ content: [{ type: "tool_call", name: "mcp__fs__list" }] });
  });

  it("Claude Code's first request toward OpenAI and Gemini: system note in place, effort translated, context_management dropped and named", async () => {
    const { protocols } = await import("./index.ts");
    const req = protocols.anthropic.parseClientRequest({
      model: "m",
      max_tokens: 32000,
      messages: [
        { role: "user", content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }] },
        { role: "system", content: "Environment: linux" },
      ],
      context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
      output_config: { effort: "high" },
    });
    const o = protocols.openai.buildUpstreamRequest(req, "o", { stream: false, reasoning: true });
    expect(o.body.messages).toEqual([
      { role: "user", content: "hi" },
      { role: "system", content: "Environment: linux" },
    ]);
    expect(o.body.reasoning_effort).toBe("high");
    expect(o.dropped).toEqual(["context_management", "cache_control"]);
    const g = protocols.gemini.buildUpstreamRequest(req, "g", { stream: false, reasoning: true });
    expect(g.body.contents).toEqual([
      { role: "user", parts: [{ text: "hi" }, { text: "<system>\nEnvironment: linux\n</system>" }] },
    ]);
    expect(g.dropped).toEqual(["context_management", "cache_control"]);
  });

  it("asks a model configured without reasoning for none, naming what the client sent (the Gemini CLI's thinkingConfig)", async () => {
    const { protocols } = await import("./index.ts");
    const req = protocols.gemini.parseClientRequest(
      {
        contents: [{ role: "user", parts: [{ text: "x" }] }],
        generationConfig: { topK: 64, thinkingConfig: { includeThoughts: true, thinkingBudget: 8192 } },
      },
      { model: "m" },
    );
    const plain = protocols.openai.buildUpstreamRequest(req, "o", { stream: false, reasoning: false });
    expect(plain.body.reasoning_effort).toBeUndefined();
    expect(plain.dropped).toEqual(["generationConfig.topK", "generationConfig.thinkingConfig"]);
    const thinker = protocols.openai.buildUpstreamRequest(req, "o", { stream: false, reasoning: true });
    expect(thinker.body.reasoning_effort).toBe("medium");
    expect(thinker.dropped).toEqual(["generationConfig.topK"]);
  });
});
