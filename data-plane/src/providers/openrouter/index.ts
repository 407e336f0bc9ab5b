import { openAICompatible } from "../openai-compatible/preset.ts";

// OpenRouter: reasoning in `reasoning` (answers and deltas); cache reads in prompt_tokens_details as OpenAI.
export const openrouter = openAICompatible({ name: "openrouter", baseUrl: "https://openrouter.ai/api/v1" });
