// GET /v1/models (and /v1beta/models) in each protocol's shape; every adapter points at one of these.

import type { ModelSnapshot } from "../contract/index.ts";

const created = (m: ModelSnapshot) => Math.floor(Date.parse(m.createdAt) / 1000);

export const openaiModel = (m: ModelSnapshot) => ({
  id: m.id,
  object: "model",
  created: created(m),
  owned_by: "modelgate",
});
export const openaiModelList = (models: ModelSnapshot[]) => ({ object: "list", data: models.map(openaiModel) });

export const anthropicModel = (m: ModelSnapshot) => ({
  type: "model",
  id: m.id,
  display_name: m.displayName ?? m.id,
  created_at: m.createdAt,
});
export const anthropicModelList = (models: ModelSnapshot[]) => ({
  data: models.map(anthropicModel),
  has_more: false,
  first_id: models[0]?.id ?? null,
  last_id: models.at(-1)?.id ?? null,
});

export const geminiModel = (m: ModelSnapshot) => ({
  name: `models/${m.id}`,
  baseModelId: m.id,
  displayName: m.displayName ?? m.id,
  supportedGenerationMethods:
    m.type === "embedding" ? ["embedContent", "batchEmbedContents"] : ["generateContent", "streamGenerateContent"],
  thinking: m.reasoning,
});
export const geminiModelList = (models: ModelSnapshot[]) => ({ models: models.map(geminiModel) });
