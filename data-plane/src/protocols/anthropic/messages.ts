// Anthropic content blocks ↔ canonical messages. Anthropic has only user/assistant turns: tool results
// ride in user turns as tool_result blocks, and tool calls in assistant turns as tool_use blocks.

import { z } from "zod";
import type { AssistantPart, CanonicalMessage, ToolMessage, UserPart } from "../canonical.ts";
import { type Json, invalid, parseArguments, systemNote } from "../shared.ts";

const textBlock = z.looseObject({ type: z.literal("text"), text: z.string() });
const imageBlock = z.looseObject({
  type: z.literal("image"),
  source: z.discriminatedUnion("type", [
    z.looseObject({ type: z.literal("base64"), media_type: z.string(), data: z.string() }),
    z.looseObject({ type: z.literal("url"), url: z.string() }),
  ]),
});
const toolUseBlock = z.looseObject({
  type: z.literal("tool_use"),
  id: z.string(),
  name: z.string(),
  input: z.record(z.string(), z.unknown()),
});
const toolResultBlock = z.looseObject({
  type: z.literal("tool_result"),
  tool_use_id: z.string(),
  content: z.union([z.string(), z.array(z.union([textBlock, imageBlock]))]).optional(),
  is_error: z.boolean().optional(),
});
const thinkingBlock = z.looseObject({
  type: z.literal("thinking"),
  thinking: z.string(),
  signature: z.string().optional(),
});
const redactedThinkingBlock = z.looseObject({ type: z.literal("redacted_thinking"), data: z.string() });

export const anthropicBlock = z.discriminatedUnion("type", [
  textBlock,
  imageBlock,
  toolUseBlock,
  toolResultBlock,
  thinkingBlock,
  redactedThinkingBlock,
]);
export const anthropicMessage = z.looseObject({
  // "system": a mid-conversation instruction (Claude Code's environment note), which Anthropic's API takes.
  role: z.enum(["user", "assistant", "system"]),
  content: z.union([z.string(), z.array(anthropicBlock)]),
});
type Block = z.infer<typeof anthropicBlock>;
type ImageBlock = z.infer<typeof imageBlock>;

const imageOf = (b: ImageBlock): UserPart =>
  b.source.type === "base64"
    ? { type: "image", source: { kind: "base64", mediaType: b.source.media_type, data: b.source.data } }
    : { type: "image", source: { kind: "url", url: b.source.url } };

export function messagesFromAnthropic(messages: z.infer<typeof anthropicMessage>[]): CanonicalMessage[] {
  const out: CanonicalMessage[] = [];
  messages.forEach((m, i) => {
    const blocks: Block[] = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
    if (m.role === "system") {
      const text = blocks.map((b, j) => {
        if (b.type !== "text")
          throw invalid("invalid_value", "A system message holds text only.", `messages[${i}].content[${j}]`);
        return b.text;
      });
      out.push({ role: "system", text: text.join("\n") });
      return;
    }
    if (m.role === "assistant") {
      const parts: AssistantPart[] = [];
      blocks.forEach((b, j) => {
        if (b.type === "text") parts.push({ type: "text", text: b.text });
        else if (b.type === "thinking") {
          parts.push(
            b.signature === undefined
              ? { type: "thinking", text: b.thinking }
              : { type: "thinking", text: b.thinking, signature: b.signature },
          );
        } else if (b.type === "tool_use") {
          parts.push({ type: "tool_call", id: b.id, name: b.name, arguments: JSON.stringify(b.input) });
        } else if (b.type === "redacted_thinking") {
          // Encrypted reasoning only Anthropic can read; no other protocol can carry it.
        } else {
          throw invalid(
            "invalid_value",
            `A '${b.type}' block is not allowed in an assistant message.`,
            `messages[${i}].content[${j}]`,
          );
        }
      });
      out.push({ role: "assistant", content: parts });
      return;
    }
    // A user turn: tool results become tool messages (first, as Anthropic requires), the rest one user message.
    const user: UserPart[] = [];
    blocks.forEach((b, j) => {
      if (b.type === "text") user.push({ type: "text", text: b.text });
      else if (b.type === "image") user.push(imageOf(b));
      else if (b.type === "tool_result") {
        const content: UserPart[] =
          b.content === undefined
            ? []
            : typeof b.content === "string"
              ? [{ type: "text", text: b.content }]
              : b.content.map((c) => (c.type === "text" ? { type: "text", text: c.text } : imageOf(c)));
        const tm: ToolMessage = { role: "tool", toolCallId: b.tool_use_id, content };
        if (b.is_error) tm.isError = true;
        out.push(tm);
      } else {
        throw invalid(
          "invalid_value",
          `A '${b.type}' block is not allowed in a user message.`,
          `messages[${i}].content[${j}]`,
        );
      }
    });
    if (user.length > 0 || blocks.length === 0) out.push({ role: "user", content: user });
  });
  return out;
}

const userBlock = (p: UserPart): Json =>
  p.type === "text"
    ? { type: "text", text: p.text }
    : {
        type: "image",
        source:
          p.source.kind === "url"
            ? { type: "url", url: p.source.url }
            : { type: "base64", media_type: p.source.mediaType, data: p.source.data },
      };

/** Canonical → Anthropic turns: tool messages and user messages that follow each other share one user turn. */
export function messagesToAnthropic(messages: CanonicalMessage[]): Json[] {
  const out: { role: "user" | "assistant"; content: Json[] }[] = [];
  const turn = (role: "user" | "assistant"): Json[] => {
    const last = out[out.length - 1];
    if (last && last.role === role) return last.content;
    const fresh = { role, content: [] as Json[] };
    out.push(fresh);
    return fresh.content;
  };
  messages.forEach((m, i) => {
    if (m.role === "system") {
      // Anthropic has no system turn: the note joins the user turn, delimited so it reads as an instruction.
      turn("user").push({ type: "text", text: systemNote(m.text) });
    } else if (m.role === "user") {
      turn("user").push(...m.content.map(userBlock));
    } else if (m.role === "tool") {
      const block: Json = { type: "tool_result", tool_use_id: m.toolCallId };
      const only = m.content[0];
      block.content = m.content.length === 1 && only?.type === "text" ? only.text : m.content.map(userBlock);
      if (m.isError) block.is_error = true;
      turn("user").push(block);
    } else {
      const blocks = turn("assistant");
      m.content.forEach((p, j) => {
        if (p.type === "text") {
          // Anthropic rejects empty text blocks.
          if (p.text !== "") blocks.push({ type: "text", text: p.text });
        } else if (p.type === "thinking") {
          // Without its signature Anthropic rejects a thinking block, so unsigned reasoning stays behind.
          if (p.signature) blocks.push({ type: "thinking", thinking: p.text, signature: p.signature });
        } else {
          blocks.push({
            type: "tool_use",
            id: p.id,
            name: p.name,
            input: parseArguments(p.arguments, `messages[${i}].tool_calls[${j}].function.arguments`),
          });
        }
      });
    }
  });
  // An assistant turn that held only unsigned reasoning would be an empty turn, which Anthropic rejects.
  return out.filter((t) => t.content.length > 0);
}
