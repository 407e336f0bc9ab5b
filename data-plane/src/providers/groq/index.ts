import { openAICompatible } from "../openai-compatible/preset.ts";

// Groq: a stream's usage may come as `x_groq.usage` in its last chunk (read by the OpenAI protocol).
export const groq = openAICompatible({ name: "groq", baseUrl: "https://api.groq.com/openai/v1" });
