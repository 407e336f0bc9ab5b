import { openAICompatible } from "../openai-compatible/preset.ts";

// vLLM's OpenAI-compatible server: local, no key unless started with --api-key; reasoning parsers answer with
// `reasoning_content`.
export const vllm = openAICompatible({ name: "vllm", baseUrl: "http://127.0.0.1:8000/v1", needsKey: false });
