import { openAICompatible } from "../openai-compatible/preset.ts";

// xAI: reasoning models answer with `reasoning_content`; cache reads in prompt_tokens_details as OpenAI.
export const xai = openAICompatible({ name: "xai", baseUrl: "https://api.x.ai/v1" });
