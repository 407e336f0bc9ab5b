import { openAICompatible } from "../openai-compatible/preset.ts";

// Together AI: OpenAI's Chat Completions; reasoning models (DeepSeek R1 and others) add `reasoning`.
export const together = openAICompatible({ name: "together", baseUrl: "https://api.together.xyz/v1" });
