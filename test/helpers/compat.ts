// The conformance matrix's vocabulary (docs/compatibility.md): which client, toward which upstream protocol,
// proves which feature. A test claims cells by putting compat(...) tags in its title; scripts/compat-matrix.ts
// reads them back from vitest's JSON report (a passing test proves its cells) and writes the document, and
// test/unit/compatibility-doc.test.ts checks the committed document against the tags the test files carry.

export const CLIENTS = [
  "openai-sdk",
  "anthropic-sdk",
  "genai-sdk",
  "ai-sdk",
  "langchain",
  "codex",
  "claude-code",
  "gemini-cli",
] as const;
export type Client = (typeof CLIENTS)[number];

export const CLIENT_NAMES: Record<Client, string> = {
  "openai-sdk": "openai SDK",
  "anthropic-sdk": "Anthropic SDK",
  "genai-sdk": "@google/genai",
  "ai-sdk": "AI SDK",
  langchain: "LangChain",
  codex: "Codex CLI",
  "claude-code": "Claude Code",
  "gemini-cli": "Gemini CLI",
};

/** Upstream protocols toward a direct upstream, then providers (docs/providers.md) by their provider name. */
export const UPSTREAMS = [
  "openai",
  "anthropic",
  "gemini",
  "openai-responses",
  "azure-openai",
  "bedrock",
  "vertex",
  "deepseek",
  "groq",
  "moonshot",
  "openrouter",
  "mistral",
] as const;
export type Upstream = (typeof UPSTREAMS)[number];

export const FEATURES = ["text", "stream", "tools", "reasoning", "structured", "images", "usage", "cache"] as const;
export type Feature = (typeof FEATURES)[number];

export const FEATURE_NAMES: Record<Feature, string> = {
  text: "text",
  stream: "stream",
  tools: "tools",
  reasoning: "reasoning",
  structured: "structured output",
  images: "images",
  usage: "usage",
  cache: "cache counts",
};

/** A cell id: client/upstream/feature. */
export type Cell = `${Client}/${Upstream}/${Feature}`;

const TAG = /\[compat ([a-z-]+)\/([a-z-]+): ([a-z ]+)\]/g;

/** The tag a test puts in its title to claim these cells, e.g. "[compat codex/gemini: text stream]". */
export function compat(client: Client, upstream: Upstream, ...features: Feature[]): string {
  if (features.length === 0) throw new Error("compat(): name at least one feature");
  return `[compat ${client}/${upstream}: ${features.join(" ")}]`;
}

/** The cells a test title claims; a tag naming an unknown client, upstream or feature throws. */
export function cellsOf(title: string): Cell[] {
  const cells: Cell[] = [];
  for (const m of title.matchAll(TAG)) {
    const [, client, upstream, features] = m as unknown as [string, string, string, string];
    if (!(CLIENTS as readonly string[]).includes(client)) throw new Error(`unknown compat client '${client}'`);
    if (!(UPSTREAMS as readonly string[]).includes(upstream)) throw new Error(`unknown compat upstream '${upstream}'`);
    for (const f of features.split(" ")) {
      if (!(FEATURES as readonly string[]).includes(f)) throw new Error(`unknown compat feature '${f}'`);
      cells.push(`${client}/${upstream}/${f}` as Cell);
    }
  }
  return cells;
}
