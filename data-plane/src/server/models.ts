import type { ModelSnapshot } from "../contract/index.ts";
import type { ProtocolName } from "../protocols/index.ts";

// GET /v1/models (and /v1beta/models) in the shape of the protocol the client speaks.

const created = (m: ModelSnapshot) => Math.floor(Date.parse(m.createdAt) / 1000);

export function renderModelList(protocol: ProtocolName, models: ModelSnapshot[]): unknown {
  switch (protocol) {
    case "openai":
      return { object: "list", data: models.map(openaiModel) };
    case "anthropic":
      return {
        data: models.map(anthropicModel),
        has_more: false,
        first_id: models[0]?.id ?? null,
        last_id: models.at(-1)?.id ?? null,
      };
    case "gemini":
      return { models: models.map(geminiModel) };
  }
}

export function renderModel(protocol: ProtocolName, m: ModelSnapshot): unknown {
  return protocol === "openai" ? openaiModel(m) : protocol === "anthropic" ? anthropicModel(m) : geminiModel(m);
}

const openaiModel = (m: ModelSnapshot) => ({ id: m.id, object: "model", created: created(m), owned_by: "modelgate" });
const anthropicModel = (m: ModelSnapshot) => ({ type: "model", id: m.id, display_name: m.displayName ?? m.id, created_at: m.createdAt });
const geminiModel = (m: ModelSnapshot) => ({
  name: `models/${m.id}`,
  baseModelId: m.id,
  displayName: m.displayName ?? m.id,
  supportedGenerationMethods: m.type === "embedding" ? ["embedContent", "batchEmbedContents"] : ["generateContent", "streamGenerateContent"],
  thinking: m.reasoning,
});
