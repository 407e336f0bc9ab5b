import { openAICompatible } from "../openai-compatible/preset.ts";

// Ollama's OpenAI-compatible endpoint: local, no key; thinking models answer with `reasoning`.
export const ollama = openAICompatible({ name: "ollama", baseUrl: "http://127.0.0.1:11434/v1", needsKey: false });
