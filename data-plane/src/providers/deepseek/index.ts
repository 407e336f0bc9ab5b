import { openAICompatible } from "../openai-compatible/preset.ts";

// DeepSeek: reasoning in `reasoning_content` (answers and deltas); cache reads as `prompt_cache_hit_tokens`
// beside `prompt_cache_miss_tokens` (their sum is prompt_tokens), billed as cached and uncached input.
export const deepseek = openAICompatible({ name: "deepseek", baseUrl: "https://api.deepseek.com/v1" });
