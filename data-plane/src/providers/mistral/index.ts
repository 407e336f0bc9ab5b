import { openAICompatible } from "../openai-compatible/preset.ts";
import type { ProtocolCall } from "../types.ts";

// Mistral: its last stream chunk carries usage unasked, and its API refuses request fields it does not know,
// so the `stream_options` the gateway adds to learn the usage is taken out again.
export const mistral = openAICompatible({
  name: "mistral",
  baseUrl: "https://api.mistral.ai/v1",
  body: withoutStreamOptions,
});

function withoutStreamOptions(call: ProtocolCall): string | null {
  if (!call.stream || call.op !== "generate") return null;
  const text = typeof call.body === "string" ? call.body : call.body.toString("utf8");
  if (!text.includes('"stream_options"')) return null;
  const body = JSON.parse(text) as Record<string, unknown>;
  delete body.stream_options;
  return JSON.stringify(body);
}
