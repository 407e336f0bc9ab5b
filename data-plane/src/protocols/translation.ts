// What becomes of each client parameter when the upstream speaks another protocol, as data: the translators
// read it, and docs/protocols.md's table is generated from it (a unit test fails when they disagree). Each
// parameter is one of four kinds (shared DESIGN.md, "Translation by kind"):
//
//   translate  the upstream has the same meaning: the translator writes it in the upstream's terms;
//   drop       a hint with no equivalent that cannot make the answer wrong: left out and named in the answer's
//              x-modelgate-dropped header (and the usage row);
//   hosted     a tool the vendor runs: the upstream's native tool where it has one (translate), else removed
//              from the tools offered and named the same way, so a model is never handed a tool it cannot run;
//   refuse     it changes the answer's contract (n > 1, logprobs, audio, logit_bias …): a 400 naming it.
//
// A model marked `strict` turns drop and hosted-removed into refusals. When client and upstream speak the same
// protocol nothing here applies: the body passes through.

import type { CanonicalRequest, ProtocolName, ReasoningConfig } from "./canonical.ts";
import { invalid } from "./shared.ts";

export type Kind = "translate" | "drop" | "hosted" | "refuse";

export interface Disposition {
  kind: Kind;
  /** translate / hosted: what it becomes upstream; drop / refuse: why (shown in docs and in a refusal). */
  note?: string;
}

export interface ParameterRow {
  /** The parameter as the client writes it (`generationConfig.topK`); the name dropped parameters are listed by. */
  param: string;
  /** The client protocol it belongs to. */
  client: ProtocolName;
  /** Toward each other upstream protocol (the client's own passes it through). */
  toward: Partial<Record<ProtocolName, Disposition>>;
}

export const PROTOCOL_NAMES: readonly ProtocolName[] = ["openai", "anthropic", "gemini", "openai-responses"];

const t = (note: string): Disposition => ({ kind: "translate", note });
const drop = (note?: string): Disposition => (note === undefined ? { kind: "drop" } : { kind: "drop", note });
const refuse = (note: string): Disposition => ({ kind: "refuse", note });
const hosted = (note?: string): Disposition => (note === undefined ? { kind: "hosted" } : { kind: "hosted", note });
/** The same disposition toward every upstream but the client's own. */
const all = (client: ProtocolName, d: Disposition): Partial<Record<ProtocolName, Disposition>> =>
  Object.fromEntries(PROTOCOL_NAMES.filter((p) => p !== client).map((p) => [p, d]));

const SYSTEM_NOTE = "a user turn's text block wrapped in <system>…</system>";

/** The rows, grouped by client protocol. Parameters every protocol shares (messages, tools, temperature …) are
 * in docs/protocols.md's prose; these are the ones whose fate depends on the direction. */
export const TRANSLATION_ROWS: readonly ParameterRow[] = [
  // ---- OpenAI Chat Completions clients ----
  {
    param: "messages[].role: system/developer (after the first turn)",
    client: "openai",
    toward: {
      anthropic: t(SYSTEM_NOTE),
      gemini: t(SYSTEM_NOTE.replace("a user turn's text block", "a user part")),
      "openai-responses": t("a system/developer message in place"),
    },
  },
  {
    param: "reasoning_effort",
    client: "openai",
    toward: {
      anthropic: t("thinking budget 1024/8192/24576"),
      gemini: t("thinkingConfig.thinkingBudget"),
      "openai-responses": t("reasoning.effort"),
    },
  },
  {
    param: "response_format: json_object",
    client: "openai",
    toward: {
      anthropic: t('output_config.format json_schema {"type":"object"}'),
      gemini: t("responseMimeType application/json"),
      "openai-responses": t("text.format json_object"),
    },
  },
  {
    param: "presence_penalty",
    client: "openai",
    toward: { anthropic: drop(), gemini: t("generationConfig.presencePenalty"), "openai-responses": drop() },
  },
  {
    param: "frequency_penalty",
    client: "openai",
    toward: { anthropic: drop(), gemini: t("generationConfig.frequencyPenalty"), "openai-responses": drop() },
  },
  {
    param: "seed",
    client: "openai",
    toward: { anthropic: drop(), gemini: t("generationConfig.seed"), "openai-responses": drop() },
  },
  { param: "store", client: "openai", toward: all("openai", drop()) },
  { param: "metadata", client: "openai", toward: all("openai", drop()) },
  { param: "prompt_cache_key", client: "openai", toward: all("openai", drop()) },
  { param: "web_search_options", client: "openai", toward: all("openai", hosted()) },
  { param: "n", client: "openai", toward: all("openai", refuse("only one choice can be translated")) },
  { param: "logprobs", client: "openai", toward: all("openai", refuse("no token log-probabilities there")) },
  { param: "top_logprobs", client: "openai", toward: all("openai", refuse("no token log-probabilities there")) },
  { param: "logit_bias", client: "openai", toward: all("openai", refuse("token ids are OpenAI's")) },
  { param: "audio", client: "openai", toward: all("openai", refuse("no audio output there")) },
  { param: "modalities", client: "openai", toward: all("openai", refuse("text only")) },
  { param: "verbosity", client: "openai", toward: all("openai", refuse("no equivalent")) },
  { param: "service_tier", client: "openai", toward: all("openai", refuse("flex/priority/scale have no equivalent")) },
  { param: "functions", client: "openai", toward: all("openai", refuse("send tools instead")) },
  { param: "function_call", client: "openai", toward: all("openai", refuse("send tool_choice instead")) },
  {
    param: "stop",
    client: "openai",
    toward: {
      anthropic: t("stop_sequences"),
      gemini: t("generationConfig.stopSequences"),
      "openai-responses": refuse("the Responses API has no stop sequences"),
    },
  },

  // ---- Anthropic Messages clients ----
  {
    param: "messages[].role: system",
    client: "anthropic",
    toward: {
      openai: t("a system message in place"),
      gemini: t(SYSTEM_NOTE.replace("a user turn's text block", "a user part")),
      "openai-responses": t("a system message in place"),
    },
  },
  {
    param: "output_config.effort",
    client: "anthropic",
    toward: {
      openai: t("reasoning_effort (reasoning models; dropped for others)"),
      gemini: t("thinkingConfig.thinkingBudget"),
      "openai-responses": t("reasoning.effort (reasoning models; dropped for others)"),
    },
  },
  {
    param: "top_k",
    client: "anthropic",
    toward: { openai: drop(), gemini: t("generationConfig.topK"), "openai-responses": drop() },
  },
  { param: "context_management", client: "anthropic", toward: all("anthropic", drop()) },
  { param: "cache_control", client: "anthropic", toward: all("anthropic", drop()) },
  { param: "tools[].defer_loading", client: "anthropic", toward: all("anthropic", drop()) },
  { param: "service_tier", client: "anthropic", toward: all("anthropic", drop()) },
  { param: "speed", client: "anthropic", toward: all("anthropic", drop()) },
  {
    param: "metadata.user_id",
    client: "anthropic",
    toward: { openai: t("user"), gemini: drop(), "openai-responses": t("user") },
  },
  {
    param: "tools[]: web_search_*",
    client: "anthropic",
    toward: { openai: hosted(), gemini: hosted("googleSearch"), "openai-responses": hosted("web_search") },
  },
  {
    param: "tools[]: web_fetch_*",
    client: "anthropic",
    toward: { openai: hosted(), gemini: hosted("urlContext"), "openai-responses": hosted() },
  },
  {
    param: "tools[]: code_execution_*",
    client: "anthropic",
    toward: { openai: hosted(), gemini: hosted("codeExecution"), "openai-responses": hosted() },
  },
  {
    param: "tools[]: other server tools (bash_*, text_editor_*, …)",
    client: "anthropic",
    toward: all("anthropic", hosted()),
  },
  { param: "mcp_servers", client: "anthropic", toward: all("anthropic", hosted()) },
  {
    param: "container",
    client: "anthropic",
    toward: all("anthropic", refuse("a code-execution container is Anthropic's")),
  },

  // ---- Gemini clients ----
  {
    param: "generationConfig.topK",
    client: "gemini",
    toward: { openai: drop(), anthropic: t("top_k"), "openai-responses": drop() },
  },
  {
    param: "generationConfig.presencePenalty",
    client: "gemini",
    toward: { openai: t("presence_penalty"), anthropic: drop(), "openai-responses": drop() },
  },
  {
    param: "generationConfig.frequencyPenalty",
    client: "gemini",
    toward: { openai: t("frequency_penalty"), anthropic: drop(), "openai-responses": drop() },
  },
  {
    param: "generationConfig.seed",
    client: "gemini",
    toward: { openai: t("seed"), anthropic: drop(), "openai-responses": drop() },
  },
  {
    param: "generationConfig.thinkingConfig",
    client: "gemini",
    toward: { openai: t("reasoning_effort"), anthropic: t("thinking"), "openai-responses": t("reasoning.effort") },
  },
  {
    param: "generationConfig.responseMimeType: application/json (no schema)",
    client: "gemini",
    toward: {
      openai: t("response_format json_object"),
      anthropic: t('output_config.format json_schema {"type":"object"}'),
      "openai-responses": t("text.format json_object"),
    },
  },
  {
    param: "safetySettings",
    client: "gemini",
    toward: all("gemini", drop("the other vendors apply their own filters")),
  },
  { param: "labels", client: "gemini", toward: all("gemini", drop()) },
  {
    param: "tools[].googleSearch",
    client: "gemini",
    toward: { openai: hosted(), anthropic: hosted("web_search_20250305"), "openai-responses": hosted("web_search") },
  },
  {
    param: "tools[].urlContext",
    client: "gemini",
    toward: { openai: hosted(), anthropic: hosted("web_fetch_20250910"), "openai-responses": hosted() },
  },
  {
    param: "tools[].codeExecution",
    client: "gemini",
    toward: { openai: hosted(), anthropic: hosted("code_execution_20250825"), "openai-responses": hosted() },
  },
  { param: "cachedContent", client: "gemini", toward: all("gemini", refuse("the cached content is Google's")) },
  {
    param: "generationConfig.candidateCount",
    client: "gemini",
    toward: all("gemini", refuse("only one candidate can be translated")),
  },
  {
    param: "generationConfig.responseLogprobs",
    client: "gemini",
    toward: {
      openai: t("logprobs"),
      anthropic: refuse("no token log-probabilities there"),
      "openai-responses": refuse("no token log-probabilities there"),
    },
  },
  {
    param: "generationConfig.logprobs",
    client: "gemini",
    toward: all("gemini", refuse("no token log-probabilities there")),
  },
  { param: "generationConfig.responseModalities", client: "gemini", toward: all("gemini", refuse("text only")) },
  { param: "generationConfig.speechConfig", client: "gemini", toward: all("gemini", refuse("no audio output there")) },
  { param: "generationConfig.imageConfig", client: "gemini", toward: all("gemini", refuse("no image output there")) },

  // ---- OpenAI Responses clients ----
  {
    param: "input[].role: system/developer (after the first item)",
    client: "openai-responses",
    toward: {
      openai: t("a system message in place"),
      anthropic: t(SYSTEM_NOTE),
      gemini: t(SYSTEM_NOTE.replace("a user turn's text block", "a user part")),
    },
  },
  {
    param: "tools[]: namespace",
    client: "openai-responses",
    toward: all("openai-responses", t("its function tools flattened to <namespace>__<name>; calls mapped back")),
  },
  {
    param: "tools[]: web_search",
    client: "openai-responses",
    toward: { openai: hosted(), anthropic: hosted("web_search_20250305"), gemini: hosted("googleSearch") },
  },
  {
    param: "tools[]: other hosted tools (file_search, code_interpreter, image_generation, mcp, …)",
    client: "openai-responses",
    toward: all("openai-responses", hosted()),
  },
  {
    param: "reasoning.effort",
    client: "openai-responses",
    toward: {
      openai: t("reasoning_effort"),
      anthropic: t("thinking budget"),
      gemini: t("thinkingConfig.thinkingBudget"),
    },
  },
  { param: "text.verbosity", client: "openai-responses", toward: all("openai-responses", drop()) },
  { param: "include", client: "openai-responses", toward: all("openai-responses", drop()) },
  { param: "prompt_cache_key", client: "openai-responses", toward: all("openai-responses", drop()) },
  { param: "safety_identifier", client: "openai-responses", toward: all("openai-responses", drop()) },
  { param: "client_metadata", client: "openai-responses", toward: all("openai-responses", drop()) },
  {
    param: "background",
    client: "openai-responses",
    toward: all("openai-responses", refuse("the answer is the upstream's to keep")),
  },
  {
    param: "top_logprobs",
    client: "openai-responses",
    toward: all("openai-responses", refuse("no token log-probabilities there")),
  },
  {
    param: "prompt",
    client: "openai-responses",
    toward: all("openai-responses", refuse("a stored prompt is OpenAI's")),
  },
  {
    param: "conversation",
    client: "openai-responses",
    toward: all("openai-responses", refuse("a stored conversation is OpenAI's")),
  },
  {
    param: "service_tier",
    client: "openai-responses",
    toward: all("openai-responses", refuse("flex/priority/scale have no equivalent")),
  },
];

const index = new Map<string, ParameterRow>();
for (const row of TRANSLATION_ROWS) index.set(`${row.client} ${row.param}`, row);

/** The table of one direction: each parameter of `client` and what it becomes toward `upstream`. */
export function directionTable(
  client: ProtocolName,
  upstream: ProtocolName,
): { param: string; disposition: Disposition }[] {
  if (client === upstream) return [];
  return TRANSLATION_ROWS.filter((r) => r.client === client && r.toward[upstream]).map((r) => ({
    param: r.param,
    disposition: r.toward[upstream]!,
  }));
}

/** A row's disposition in one direction; parameters not in the table are dropped (and named). */
export function dispositionOf(client: ProtocolName, param: string, upstream: ProtocolName): Disposition {
  const row = index.get(`${client} ${param}`);
  if (!row) return { kind: "drop" };
  const d = row.toward[upstream];
  if (!d) throw new Error(`translation table: '${param}' of ${client} has no entry toward ${upstream}`);
  return d;
}

/** Canonical fields some protocols lack, by each client protocol's name for them. */
const CANONICAL_PARAMS = {
  topK: { anthropic: "top_k", gemini: "generationConfig.topK" },
  presencePenalty: { openai: "presence_penalty", gemini: "generationConfig.presencePenalty" },
  frequencyPenalty: { openai: "frequency_penalty", gemini: "generationConfig.frequencyPenalty" },
  seed: { openai: "seed", gemini: "generationConfig.seed" },
  n: { openai: "n", gemini: "generationConfig.candidateCount" },
  logprobs: { openai: "logprobs", gemini: "generationConfig.responseLogprobs" },
  stop: { openai: "stop" },
} satisfies Record<string, Partial<Record<ProtocolName, string>>>;
export type CanonicalFeature = keyof typeof CANONICAL_PARAMS;

/** Whether a request asks for the field: one choice, no log-probabilities, are what every upstream gives. */
const ASKS: Record<CanonicalFeature, (req: CanonicalRequest) => boolean> = {
  topK: (req) => req.topK !== undefined,
  presencePenalty: (req) => req.presencePenalty !== undefined,
  frequencyPenalty: (req) => req.frequencyPenalty !== undefined,
  seed: (req) => req.seed !== undefined,
  n: (req) => req.n !== undefined && req.n > 1,
  logprobs: (req) => req.logprobs === true,
  stop: (req) => req.stop !== undefined,
};

/** Where each client protocol asks for reasoning. */
const REASONING_PARAM: Record<ProtocolName, string> = {
  openai: "reasoning_effort",
  anthropic: "thinking",
  gemini: "generationConfig.thinkingConfig",
  "openai-responses": "reasoning.effort",
};

/** Top-level fields of a client body its parser does not know (`known`), by name. */
export function unknownFields(body: Record<string, unknown>, known: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const k in body) if (!known.has(k) && body[k] !== undefined && body[k] !== null) out.push(k);
  return out;
}

const UPSTREAM_LABEL: Record<ProtocolName, string> = {
  openai: "OpenAI",
  anthropic: "Anthropic",
  gemini: "Gemini",
  "openai-responses": "OpenAI Responses",
};

/** How many dropped names a call lists (header and usage row); past it, one last entry counts the rest. */
export const DROPPED_NAMES_LISTED = 32;
const DROPPED_NAME_CHARS = 128;

/**
 * A dropped parameter's name as it is listed. Unknown names are the client's own keys: cut to 128 characters,
 * and anything but printable ASCII (control characters, NUL, which Postgres refuses in text, non-ASCII, which a
 * header cannot carry) and the list's comma become '?', so a name can break neither the header nor settlement.
 */
export const listedName = (name: string): string => name.slice(0, DROPPED_NAME_CHARS).replace(/[^\x20-\x7e]|,/g, "?");

/**
 * One translation's bookkeeping: the translator asks what to do with each parameter of the table it meets, and
 * this records what was dropped (in the client's names, for the x-modelgate-dropped header) or refuses.
 */
export class Translation {
  readonly dropped: string[] = [];
  constructor(
    readonly client: ProtocolName,
    readonly upstream: ProtocolName,
    /** the model is `strict`: drops and removed hosted tools are refusals */
    readonly strict = false,
    /**
     * How a refusal names the upstream when it speaks a provider-only protocol that follows `upstream`'s table
     * (Bedrock's Converse follows Anthropic's: the same parameters have no equivalent there).
     */
    readonly label: string = UPSTREAM_LABEL[upstream],
  ) {}

  /**
   * Whether to write the parameter upstream: true for translate and for a hosted tool that has a native
   * equivalent here; false after recording a drop or a removal; throws the 400 for a refusal (and, strict, for
   * a drop or a removal). `name` is the parameter as it appears in the request when it differs from the row's.
   */
  keep(param: string, name = param): boolean {
    const d =
      this.client === this.upstream ? { kind: "translate" as const } : dispositionOf(this.client, param, this.upstream);
    if (d.kind === "translate" || (d.kind === "hosted" && d.note !== undefined)) return true;
    if (d.kind === "refuse" || this.strict) throw this.refusal(name, d);
    this.drop(name);
    return false;
  }

  /** Records a dropped name, once, within the listed bound (a body of 10,000 unknown keys lists 32 and a count). */
  private drop(name: string): void {
    const listed = listedName(name);
    if (this.dropped.includes(listed)) return;
    if (this.dropped.length < DROPPED_NAMES_LISTED) this.dropped.push(listed);
    else this.unlisted++;
  }
  private unlisted = 0;

  /** Drops a parameter by name whatever the table says (it cannot be sent here), or refuses it when strict. */
  unknown(name: string): void {
    if (this.strict) throw this.refusal(name, { kind: "drop" });
    this.drop(name);
  }

  /**
   * The reasoning to ask the upstream for: none toward a model configured without reasoning (an effort or
   * budget there is the vendor's 400; the client's own model names it a hint), named as the client wrote it.
   */
  reasoning(r: ReasoningConfig | undefined, modelReasons: boolean | undefined): ReasoningConfig | undefined {
    if (!r || !r.enabled || modelReasons !== false) return r;
    this.unknown(r.hint ?? REASONING_PARAM[this.client]);
    return undefined;
  }

  /** Whether the upstream gets a canonical field, by the client's name for it (no row: translated). */
  field(feature: CanonicalFeature): boolean {
    const name = (CANONICAL_PARAMS[feature] as Partial<Record<ProtocolName, string>>)[this.client];
    // More than one choice changes the answer's shape, and the canonical form carries one: refused toward any
    // upstream, the client's own protocol included (which gets the body as it is instead).
    if (feature === "n") throw this.refusal(name ?? "n", refuse("only one choice can be translated"));
    return name === undefined || this.keep(name);
  }

  /** The canonical fields an upstream lacks, each the request asks for as field() says, in the order given. */
  lacks(req: CanonicalRequest, features: readonly CanonicalFeature[]): void {
    for (const f of features) if (ASKS[f](req)) this.field(f);
  }

  /** The client-only and unknown parameters of a request: each dropped and named, or refused, per the table. */
  clientParams(req: { untranslatable?: string[]; unknown?: string[] }): void {
    for (const p of req.untranslatable ?? []) this.keep(p);
    for (const p of req.unknown ?? []) this.keep(p);
  }

  /** For the built request: the dropped names, when there are any. */
  result(): { dropped?: string[] } {
    if (this.dropped.length === 0) return {};
    return { dropped: this.unlisted > 0 ? [...this.dropped, `(+${this.unlisted} more)`] : this.dropped };
  }

  private refusal(name: string, d: Disposition) {
    const up = this.label;
    const why =
      d.kind === "refuse"
        ? `${d.note ?? "it cannot be translated"}; only an upstream of the client's own protocol can honour it`
        : d.kind === "hosted"
          ? "this upstream cannot run that tool, and this model is strict: remove it, or use a model that is not strict"
          : "this upstream has no equivalent, and this model is strict: remove it, or use a model that is not strict";
    const shown = listedName(name);
    return invalid(
      "unsupported_parameter",
      `'${shown}' is not supported by this model's ${up} upstream: ${why}.`,
      shown,
    );
  }
}

// ---- docs ----

const KIND_LABEL: Record<Kind, string> = {
  translate: "translated",
  drop: "dropped, named",
  hosted: "hosted tool",
  refuse: "refused (400)",
};

const cell = (d: Disposition | undefined): string => {
  if (!d) return "passes through";
  if (d.kind === "hosted") return d.note ? `native: ${d.note}` : "removed, named";
  return d.note ? `${KIND_LABEL[d.kind]}: ${d.note}` : KIND_LABEL[d.kind];
};

/** docs/protocols.md's translation tables, one per client protocol with a column per upstream protocol. */
export function renderTranslationDocs(): string {
  const out: string[] = [];
  for (const client of PROTOCOL_NAMES) {
    const ups = PROTOCOL_NAMES.filter((p) => p !== client);
    out.push(`**${UPSTREAM_LABEL[client]} clients**`, "");
    out.push(`| parameter | ${ups.map((u) => `toward ${UPSTREAM_LABEL[u]}`).join(" | ")} |`);
    out.push(`| --- | ${ups.map(() => "---").join(" | ")} |`);
    for (const row of TRANSLATION_ROWS.filter((r) => r.client === client))
      out.push(`| \`${row.param}\` | ${ups.map((u) => cell(row.toward[u]).replace(/\|/g, "\\|")).join(" | ")} |`);
    out.push("");
  }
  return out.join("\n").trimEnd() + "\n";
}
