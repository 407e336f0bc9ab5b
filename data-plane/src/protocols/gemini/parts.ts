// Gemini parts ↔ canonical parts, shared by requests (history) and responses.

import type { AssistantPart, ImagePart, ToolMessage, UserPart } from "../canonical.ts";
import { type Json, obj, parseArguments, str } from "../shared.ts";

/**
 * Gemini function calls usually have no id. Ids are derived from the name and the call's position among
 * the calls of its turn, so the same answer always gets the same ids and a client can send them back.
 */
export const geminiCallId = (name: string, index: number): string => `call_${name}_${index}`;

/** Gemini parts of a model turn → canonical assistant parts (thought text, text, function calls). */
export function assistantPartsOfGemini(parts: readonly unknown[]): AssistantPart[] {
  const out: AssistantPart[] = [];
  let calls = 0;
  for (const raw of parts) {
    const p = obj(raw);
    const signature = str(p.thoughtSignature);
    if (p.functionCall !== undefined) {
      const fc = obj(p.functionCall);
      const name = str(fc.name) ?? "";
      const part: AssistantPart = {
        type: "tool_call",
        id: str(fc.id) ?? geminiCallId(name, calls),
        name,
        arguments: JSON.stringify(fc.args ?? {}),
      };
      if (signature) part.signature = signature;
      out.push(part);
      calls++;
    } else if (typeof p.text === "string") {
      if (p.thought === true)
        out.push(signature ? { type: "thinking", text: p.text, signature } : { type: "thinking", text: p.text });
      else out.push({ type: "text", text: p.text });
    }
  }
  return out;
}

export function geminiPartsOfAssistant(parts: readonly AssistantPart[], param: string, forUpstream: boolean): Json[] {
  const out: Json[] = [];
  parts.forEach((p, j) => {
    if (p.type === "text") out.push({ text: p.text });
    else if (p.type === "thinking") {
      // Upstream: reasoning from history is not replayed (a foreign signature would be rejected).
      if (!forUpstream)
        out.push(
          p.signature
            ? { text: p.text, thought: true, thoughtSignature: p.signature }
            : { text: p.text, thought: true },
        );
    } else {
      const args = forUpstream ? parseArguments(p.arguments, `${param}[${j}]`) : lenientArgs(p.arguments);
      const part: Json = { functionCall: { name: p.name, args } };
      if (p.signature) part.thoughtSignature = p.signature;
      out.push(part);
    }
  });
  return out;
}

function lenientArgs(args: string): unknown {
  try {
    return JSON.parse(args === "" ? "{}" : args);
  } catch {
    return {};
  }
}

const MIME_OF_EXT: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  heic: "image/heic",
};

export function geminiPartOfUser(p: UserPart): Json {
  if (p.type === "text") return { text: p.text };
  if (p.source.kind === "base64") return { inlineData: { mimeType: p.source.mediaType, data: p.source.data } };
  const ext = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(p.source.url)?.[1]?.toLowerCase();
  const mimeType = ext ? MIME_OF_EXT[ext] : undefined;
  return { fileData: mimeType ? { mimeType, fileUri: p.source.url } : { fileUri: p.source.url } };
}

export function userPartOfGemini(p: Json): ImagePart | UserPart | undefined {
  if (typeof p.text === "string") return { type: "text", text: p.text };
  if (p.inlineData !== undefined) {
    const d = obj(p.inlineData);
    return {
      type: "image",
      source: { kind: "base64", mediaType: str(d.mimeType) ?? "application/octet-stream", data: str(d.data) ?? "" },
    };
  }
  if (p.fileData !== undefined)
    return { type: "image", source: { kind: "url", url: str(obj(p.fileData).fileUri) ?? "" } };
  return undefined;
}

/**
 * A tool result as Gemini's functionResponse.response, which must be an object: a JSON object result is
 * passed as is, anything else under "output" (or "error"), the keys Google's documentation uses.
 */
export function geminiFunctionResponse(m: ToolMessage, name: string): Json {
  const text = m.content.map((p) => (p.type === "text" ? p.text : "")).join("");
  let response: Json | undefined;
  if (!m.isError) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) response = parsed as Json;
    } catch {
      // not JSON: wrapped below
    }
  }
  return { functionResponse: { name, response: response ?? (m.isError ? { error: text } : { output: text }) } };
}
