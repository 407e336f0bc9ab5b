import { openAICompatible } from "../openai-compatible/preset.ts";

// Mistral: its last stream chunk carries usage unasked, and its API refuses request fields it does not know,
// so the gateway never sends it `stream_options` (streamUsageUnasked: the OpenAI request builder does not
// write the field, and the passthrough drops a client's).
export const mistral = openAICompatible({
  name: "mistral",
  baseUrl: "https://api.mistral.ai/v1",
  streamUsageUnasked: true,
});
