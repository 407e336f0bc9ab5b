import { openAICompatible } from "../openai-compatible/preset.ts";

// Moonshot (Kimi): cache reads as a top-level `cached_tokens` in usage.
export const moonshot = openAICompatible({ name: "moonshot", baseUrl: "https://api.moonshot.ai/v1" });
