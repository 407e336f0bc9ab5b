import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compat } from "../helpers/compat.ts";
import { type Gateway, startGateway, waitForKey } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";
import { startAnthropicUpstream } from "../mocks/anthropic-upstream.ts";
import { startGeminiUpstream } from "../mocks/gemini-upstream.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import { DEFAULT_MOCK_KEY, type MockUpstream, type RecordedRequest } from "../mocks/script.ts";
import { type ToolRoundTrip, toolCallsOf, toolResultsOf, toolRoundTrip } from "../mocks/tool-round-trip.ts";

// The agent CLIs as users run them (issue 26): Claude Code, the Codex CLI and the Gemini CLI, installed from npm
// at pinned versions, each given only the gateway's base URL, a key and a model, plus the offline settings
// (telemetry, update checks and the like off: DESIGN.md, turn 3), and otherwise their default configuration:
// default tools, default features. Each completes a turn with a tool round trip against an OpenAI chat, an
// Anthropic, a Gemini and an OpenAI-Responses upstream: the mock "model" calls a harmless tool the agent really
// offers (reading a file in the run's working directory), the agent runs it and sends the result back, and the
// model's final answer quotes the file's secret word, which only the tool's output carried.

type Agent = "claude-code" | "codex" | "gemini-cli";
type Up = "openai" | "anthropic" | "gemini" | "openai-responses";

/** Every agent × upstream pair. */
const CELLS: [Agent, Up][] = [
  ["claude-code", "openai"],
  ["claude-code", "anthropic"],
  ["claude-code", "gemini"],
  ["claude-code", "openai-responses"],
  ["codex", "openai"],
  ["codex", "anthropic"],
  ["codex", "gemini"],
  ["codex", "openai-responses"],
  ["gemini-cli", "openai"],
  ["gemini-cli", "anthropic"],
  ["gemini-cli", "gemini"],
  ["gemini-cli", "openai-responses"],
];

const MODEL: Record<Up, string> = {
  openai: "agent-openai",
  anthropic: "agent-anthropic",
  gemini: "agent-gemini",
  "openai-responses": "agent-responses",
};
/** The upstream's generation path, to count what reached it. */
const GENERATION: Record<Up, RegExp> = {
  openai: /\/chat\/completions$/,
  anthropic: /\/messages$/,
  gemini: /:(streamGenerateContent|generateContent)$/,
  "openai-responses": /\/responses$/,
};
const BIN = (name: string) => join(process.cwd(), "node_modules/.bin", name);
const RUN_TIMEOUT_MS = 90_000;

let mocks: { openai: MockUpstream; anthropic: MockUpstream; gemini: MockUpstream };
let gw: Gateway;
let base: string;

const mockOf = (up: Up): MockUpstream => (up === "openai-responses" ? mocks.openai : mocks[up]);
const pathOf = (r: RecordedRequest) => new URL(r.url, "http://mock").pathname;

beforeAll(async () => {
  const [o, a, g] = await Promise.all([startOpenAIUpstream(), startAnthropicUpstream(), startGeminiUpstream()]);
  mocks = { openai: o, anthropic: a, gemini: g };
  const upstreams = [
    { name: "m-openai", protocol: "openai", baseUrl: o.url },
    { name: "m-anthropic", protocol: "anthropic", baseUrl: a.url },
    { name: "m-gemini", protocol: "gemini", baseUrl: g.url },
    { name: "m-responses", protocol: "openai-responses", baseUrl: o.url },
  ].map((u) => ({ ...u, apiKey: "${MOCK_KEY}" }));
  const upstreamOf: Record<Up, string> = {
    openai: "m-openai",
    anthropic: "m-anthropic",
    gemini: "m-gemini",
    "openai-responses": "m-responses",
  };
  const models = (Object.keys(MODEL) as Up[]).map((up) => ({
    id: MODEL[up],
    price: { input: 1, output: 2 },
    routes: [{ upstream: upstreamOf[up], model: `${up}-mock` }],
  }));
  gw = await startGateway("embedded", { config: { upstreams, models }, env: { MOCK_KEY: DEFAULT_MOCK_KEY } });
  base = gw.bases[0]!;
}, 180_000);

afterAll(async () => {
  await gw?.stop();
  await Promise.all(Object.values(mocks ?? {}).map((m) => m.close()));
});

interface Run {
  code: number | null;
  out: string;
}

/** Runs a CLI with stdin closed (Codex waits for more prompt on an open pipe) and a hard timeout. */
function run(cmd: string, args: string[], cwd: string, env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      cwd,
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
      timeout: RUN_TIMEOUT_MS,
    });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString()));
    child.stderr.on("data", (c: Buffer) => (out += c.toString()));
    child.on("close", (code) => resolve({ code, out }));
  });
}

interface Setup {
  home: string;
  work: string;
  file: string;
  key: string;
  model: string;
}

/** How each agent is run: only base URL, key, model and the offline settings differ from a fresh install. */
const AGENTS: Record<
  Agent,
  {
    tool: (s: Setup) => Pick<ToolRoundTrip["call"], "name" | "arguments">;
    run: (s: Setup, prompt: string) => Promise<Run>;
  }
> = {
  // Read is allowed without asking for a file in the working directory, so `-p` runs it with the default
  // permission mode: no --dangerously-skip-permissions or --allowedTools needed.
  "claude-code": {
    tool: (s) => ({ name: "Read", arguments: { file_path: s.file } }),
    run: (s, prompt) =>
      run(BIN("claude"), ["-p", prompt, "--model", s.model], s.work, {
        HOME: s.home,
        CLAUDE_CONFIG_DIR: join(s.home, "claude-config"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        DISABLE_TELEMETRY: "1",
        DISABLE_AUTOUPDATER: "1",
        ANTHROPIC_BASE_URL: base,
        ANTHROPIC_API_KEY: s.key,
      }),
  },
  // exec_command (Codex's shell) runs `cat` in its default read-only sandbox; `codex exec` never asks.
  codex: {
    tool: () => ({ name: "exec_command", arguments: { cmd: "cat note.txt" } }),
    run: (s, prompt) => {
      writeFileSync(
        join(s.home, "config.toml"),
        [
          'model_provider = "modelgate"',
          "check_for_update_on_startup = false",
          "[model_providers.modelgate]",
          'name = "modelgate"',
          `base_url = "${base}/v1"`,
          'env_key = "MODELGATE_KEY"',
          'wire_api = "responses"',
          "[analytics]",
          "enabled = false",
          "[otel]",
          'exporter = "none"',
          'trace_exporter = "none"',
          'metrics_exporter = "none"',
          "[features]",
          "plugins = false",
          "remote_plugin = false",
          "",
        ].join("\n"),
      );
      return run(BIN("codex"), ["exec", "--skip-git-repo-check", "-m", s.model, prompt], s.work, {
        HOME: s.home,
        CODEX_HOME: s.home,
        MODELGATE_KEY: s.key,
      });
    },
  },
  // read_file needs no confirmation, so headless mode runs it. --skip-trust: without it 0.61 refuses to run
  // headless in a folder nobody trusted (its documented flag for automation).
  "gemini-cli": {
    tool: (s) => ({ name: "read_file", arguments: { file_path: s.file } }),
    run: (s, prompt) => {
      mkdirSync(join(s.home, ".gemini"));
      writeFileSync(
        join(s.home, ".gemini", "settings.json"),
        JSON.stringify({
          security: { auth: { selectedType: "gemini-api-key" } },
          privacy: { usageStatisticsEnabled: false },
          telemetry: { enabled: false },
          general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
        }),
      );
      return run(BIN("gemini"), ["--skip-trust", "-p", prompt, "-m", s.model], s.work, {
        HOME: s.home,
        GOOGLE_GEMINI_BASE_URL: base,
        GEMINI_API_KEY: s.key,
      });
    },
  },
};

/** Each vendor's call-id style; Gemini's calls carry none (results name the function). */
const CALL_ID: Record<Up, string> = {
  openai: "call_mgAgent01",
  anthropic: "toolu_mgAgent01",
  gemini: "mg-agent-01",
  "openai-responses": "call_mgAgent02",
};
const USAGE: ToolRoundTrip["usage"] = [
  { promptTokens: 1000, completionTokens: 20 },
  { promptTokens: 1100, completionTokens: 9 },
];

interface LogRow {
  requestId: string;
  model: string;
  status: number;
  promptTokens: number;
  completionTokens: number;
}

describe.each(CELLS)("%s against an upstream speaking %s", (agent, up) => {
  it(`completes a turn with a tool round trip, every call in the usage log with its tokens ${compat(agent, up, "text", "stream", "tools", "usage")}`, async () => {
    const home = mkdtempSync(join(tmpdir(), `mg-${agent}-`));
    try {
      const work = join(home, "work");
      mkdirSync(work);
      const secret = `pelican-${agent}-${up}`;
      const file = join(work, "note.txt");
      writeFileSync(file, `The secret word is ${secret}.\n`);
      const account = `agent-${agent}-${up}`;
      await gw.admin("account create", { name: account, balance: "100" });
      const key = (await gw.admin<{ key: string }>("key create", { account })).key;
      await waitForKey(gw, key);
      const s: Setup = { home, work, file, key, model: MODEL[up] };

      const mock = mockOf(up);
      const call = { id: CALL_ID[up], ...AGENTS[agent].tool(s) };
      const answer = (output: string) =>
        output.includes(secret) ? `The secret word is ${secret}, says the tool.` : `No word in: ${output}`;
      mock.fallback = toolRoundTrip({ call, answer, usage: USAGE });
      const seen = mock.requests.length;

      const r = await AGENTS[agent].run(s, "What is the secret word in note.txt? Read the file.");
      const reached = mock.requests.slice(seen).filter((q) => GENERATION[up].test(pathOf(q)));
      // On failure: what the agent printed and what reached the upstream (path, tool results it carried).
      const trail = reached.map((q) => `${q.url} results=${JSON.stringify(toolResultsOf(q))}`).join("\n");
      expect(r.out, `${agent} output; the upstream saw:\n${trail}\n`).toContain(
        `The secret word is ${secret}, says the tool.`,
      );
      expect(r.code).toBe(0);

      // The tool call went out, and a later request carried its result, answering the call in that request's
      // history (by id; a Gemini upstream by name). The call id the upstream issued comes back unchanged, except
      // through the Gemini CLI: its protocol's call ids are optional, and it names its calls itself.
      const first = reached.findIndex((q) => toolResultsOf(q).length === 0);
      const withResult = reached.findIndex((q) => toolResultsOf(q).some((t) => t.output.includes(secret)));
      expect(first).toBeGreaterThanOrEqual(0);
      expect(withResult).toBeGreaterThan(first);
      const second = reached[withResult]!;
      const result = toolResultsOf(second).find((t) => t.output.includes(secret))!;
      if (up === "gemini") expect(result.name).toBe(call.name);
      else expect(toolCallsOf(second)).toContainEqual({ id: result.callId, name: call.name });
      if (up !== "gemini" && agent !== "gemini-cli") expect(result.callId).toBe(call.id);

      // Every call that reached the upstream is in the usage log, answered, with the tokens the upstream gave.
      const rows = await eventually(
        () => gw.admin<LogRow[]>("usage list", { account, limit: "100" }),
        (rs) => rs.length >= reached.length,
      );
      expect(rows).toHaveLength(reached.length);
      for (const row of rows) {
        expect(row).toMatchObject({ model: MODEL[up], status: 200 });
        expect([USAGE[0], USAGE[1]].map((u) => [u.promptTokens, u.completionTokens])).toContainEqual([
          row.promptTokens,
          row.completionTokens,
        ]);
      }
      expect(rows.filter((x) => x.promptTokens === USAGE[1].promptTokens).length).toBeGreaterThanOrEqual(1);
      expect(rows.filter((x) => x.promptTokens === USAGE[0].promptTokens).length).toBeGreaterThanOrEqual(1);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
