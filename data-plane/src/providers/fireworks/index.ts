import { openAICompatible } from "../openai-compatible/preset.ts";

// Fireworks AI: OpenAI's Chat Completions under /inference/v1; route models are `accounts/fireworks/models/…`.
export const fireworks = openAICompatible({ name: "fireworks", baseUrl: "https://api.fireworks.ai/inference/v1" });
