import { openAICompatible } from "../openai-compatible/preset.ts";

// Qwen through DashScope's OpenAI-compatible mode (the international endpoint; mainland China's is
// https://dashscope.aliyuncs.com/compatible-mode/v1, given as baseUrl). Thinking models stream
// `reasoning_content`.
export const qwen = openAICompatible({
  name: "qwen",
  baseUrl: "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
});
