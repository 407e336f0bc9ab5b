import { describe, expect, it } from "vitest";
import { csvCell, csvHeader, csvLine, jsonLine, type ExportRow } from "./format.ts";

const row: ExportRow = {
  startedAt: new Date("2026-01-02T03:04:05.678Z"),
  requestId: "req_1",
  apiKeyId: "k1",
  model: "acme-chat-2025-01-01",
  protocol: "openai",
  status: 200,
  errorCode: null,
  promptTokens: 10,
  completionTokens: 5,
  reasoningTokens: 0,
  cachedTokens: 0,
  inputTokens: 10,
  cacheWrite5mTokens: 0,
  cacheWrite1hTokens: 0,
  inputPrice: { toString: () => "100000" } as never,
  cachedInputPrice: { toString: () => "100000" } as never,
  cacheWrite5mPrice: { toString: () => "125000.25" } as never,
  cacheWrite1hPrice: { toString: () => "200000" } as never,
  outputPrice: { toString: () => "100000" } as never,
  estimated: false,
  endUser: "u-1",
  tags: ["team=a,b", "canary"],
  dropped: ["generationConfig.topK"],
  costMicro: 1_500n,
  latencyMs: 120,
  ttftMs: null,
  stream: false,
};

describe("export lines", () => {
  it("quotes CSV cells and defuses formulas", () => {
    expect(csvCell('a,"b"')).toBe('"a,""b"""');
    expect(csvCell("=SUM(A1)")).toBe("'=SUM(A1)");
    expect(csvCell(-5)).toBe("-5");
    expect(csvCell(null)).toBe("");
    expect(csvCell("line\nbreak")).toBe('"line\nbreak"');
  });
  it("writes one CSV line per row in the header's column order", () => {
    expect(csvHeader()).toBe(
      "started_at,request_id,api_key_id,api_key_name,model,protocol,status,error_code,prompt_tokens,completion_tokens,reasoning_tokens,cached_tokens,input_tokens,cache_write_5m_tokens,cache_write_1h_tokens,total_tokens,amount,input_price,cached_input_price,cache_write_5m_price,cache_write_1h_price,output_price,estimated,end_user,tags,dropped,latency_ms,ttft_ms,stream\r\n",
    );
    expect(csvLine(row, "prod, main")).toBe(
      '2026-01-02T03:04:05.678Z,req_1,k1,"prod, main",acme-chat-2025-01-01,openai,200,,10,5,0,0,10,0,0,15,0.0015,0.1,0.1,0.12500025,0.2,0.1,false,u-1,"[""team=a,b"",""canary""]","[""generationConfig.topK""]",120,,false\r\n',
    );
  });
  it("writes JSONL with money as decimal text", () => {
    const parsed = JSON.parse(jsonLine(row, null)) as Record<string, unknown>;
    expect(parsed.amount).toBe("0.0015");
    expect(parsed.total_tokens).toBe(15);
    expect(parsed.api_key_name).toBeNull();
    expect(parsed.tags).toEqual(["team=a,b", "canary"]);
    expect(parsed.dropped).toEqual(["generationConfig.topK"]);
    expect(parsed.cache_write_5m_price).toBe("0.12500025");
  });
});
