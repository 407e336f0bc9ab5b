import { describe, expect, it } from "vitest";
import { GatewayError } from "../errors.ts";
import {
  buildGeminiEmbeddingRequest,
  parseGeminiEmbeddingRequest,
  parseGeminiEmbeddingResponse,
  renamedGeminiBody,
  renderGeminiEmbeddings,
} from "./gemini/embeddings.ts";
import {
  buildOpenAIEmbeddingRequest,
  parseOpenAIEmbeddingRequest,
  parseOpenAIEmbeddingResponse,
  renderOpenAIEmbeddings,
} from "./openai/embeddings.ts";
import { fromBase64Floats, toBase64Floats } from "./openai/vectors.ts";

describe("embeddings translation", () => {
  it("reads OpenAI input as one string, many, or token ids (which only OpenAI can take)", () => {
    expect(parseOpenAIEmbeddingRequest({ model: "m", input: "a" })).toEqual({
      request: { model: "m", inputs: ["a"] },
      base64: false,
    });
    expect(
      parseOpenAIEmbeddingRequest({ model: "m", input: ["a", "b"], dimensions: 3, encoding_format: "base64" }),
    ).toEqual({
      request: { model: "m", inputs: ["a", "b"], dimensions: 3 },
      base64: true,
    });
    expect(parseOpenAIEmbeddingRequest({ model: "m", input: [1, 2] }).request.untranslatable).toEqual(["input"]);
    expect(() => parseOpenAIEmbeddingRequest({ model: "m", input: [] })).toThrow(GatewayError);
    expect(() => parseOpenAIEmbeddingRequest({ model: "m" })).toThrow(/'input'/);
  });

  it("reads Gemini's single and batch bodies, text parts only, one dimensionality", () => {
    expect(
      parseGeminiEmbeddingRequest(
        { content: { parts: [{ text: "a" }, { text: "b" }] }, outputDimensionality: 4 },
        "embedContent",
        "m",
      ),
    ).toEqual({
      model: "m",
      inputs: ["a\nb"],
      dimensions: 4,
    });
    const batch = {
      requests: [
        { model: "models/m", content: { parts: [{ text: "x" }] }, taskType: "RETRIEVAL_QUERY" },
        { content: { parts: [{ text: "y" }] } },
      ],
    };
    expect(parseGeminiEmbeddingRequest(batch, "batchEmbedContents", "m")).toEqual({
      model: "m",
      inputs: ["x", "y"],
      untranslatable: ["taskType"],
    });
    expect(() =>
      parseGeminiEmbeddingRequest(
        { content: { parts: [{ inlineData: { mimeType: "image/png", data: "" } }] } },
        "embedContent",
        "m",
      ),
    ).toThrow(/Only text/);
    expect(() =>
      parseGeminiEmbeddingRequest(
        {
          requests: [
            { content: { parts: [{ text: "x" }] }, outputDimensionality: 2 },
            { content: { parts: [{ text: "y" }] } },
          ],
        },
        "batchEmbedContents",
        "m",
      ),
    ).toThrow(/same outputDimensionality/);
    expect(renamedGeminiBody(batch, "batchEmbedContents", "up")).toMatchObject({
      requests: [{ model: "models/up" }, { model: "models/up" }],
    });
  });

  it("builds each upstream's request and reads its answer", () => {
    const req = { model: "m", inputs: ["a", "b"], dimensions: 2 };
    expect(buildOpenAIEmbeddingRequest(req, "up")).toEqual({
      path: "/embeddings",
      body: { model: "up", input: ["a", "b"], encoding_format: "float", dimensions: 2 },
    });
    expect(buildGeminiEmbeddingRequest(req, "g/1")).toEqual({
      path: "/models/g%2F1:batchEmbedContents",
      body: {
        requests: ["a", "b"].map((text) => ({
          model: "models/g/1",
          content: { parts: [{ text }] },
          outputDimensionality: 2,
        })),
      },
    });
    // OpenAI's data may come out of order, and as base64.
    const answer = {
      data: [
        { index: 1, embedding: toBase64Floats([0.5, -1]) },
        { index: 0, embedding: [0.25, 2] },
      ],
      usage: { prompt_tokens: 7 },
    };
    expect(parseOpenAIEmbeddingResponse(answer)).toEqual({
      vectors: [
        [0.25, 2],
        [0.5, -1],
      ],
      promptTokens: 7,
    });
    expect(parseGeminiEmbeddingResponse({ embeddings: [{ values: [1] }, { values: [2] }] })).toEqual({
      vectors: [[1], [2]],
      promptTokens: null,
    });
    expect(parseGeminiEmbeddingResponse({ embedding: { values: [3] } })).toEqual({
      vectors: [[3]],
      promptTokens: null,
    });
    expect(() => parseGeminiEmbeddingResponse({ embeddings: [{}] })).toThrow(GatewayError);
  });

  it("renders each client's shape; base64 is little-endian float32", () => {
    const r = { vectors: [[0.5, -0.25]], promptTokens: null };
    expect(renderGeminiEmbeddings(r, "embedContent")).toEqual({ embedding: { values: [0.5, -0.25] } });
    expect(renderGeminiEmbeddings(r, "batchEmbedContents")).toEqual({ embeddings: [{ values: [0.5, -0.25] }] });
    const b64 = renderOpenAIEmbeddings(r, "m", true, 3) as { data: { embedding: string }[]; usage: unknown };
    expect(Buffer.from(b64.data[0]!.embedding, "base64")).toEqual(Buffer.from([0, 0, 0, 0x3f, 0, 0, 0x80, 0xbe]));
    expect(fromBase64Floats(b64.data[0]!.embedding)).toEqual([0.5, -0.25]);
    expect(b64.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
  });
});
