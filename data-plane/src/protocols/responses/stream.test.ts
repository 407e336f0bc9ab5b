import { describe, expect, it } from "vitest";
import { GatewayError } from "../../errors.ts";
import type { CanonicalStreamEvent } from "../canonical.ts";
import { SseParser } from "../sse.ts";
import { responsesPassthrough } from "./passthrough.ts";
import { createResponsesStreamDecoder, createResponsesStreamEncoder } from "./stream.ts";

// The Responses stream's sequence and parallel calls: a frame the gateway writes into a passed-through stream
// continues the upstream's sequence_number, and argument deltas of two calls in flight at once each reach
// their own item (by output_index and item id), both ways.

const REQUEST_ID = "req_0123456789abcdef01234567";
const sse = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const parse = (text: string | Uint8Array) =>
  new SseParser()
    .push(typeof text === "string" ? Buffer.from(text) : text)
    .map((e) => JSON.parse(e.data) as Record<string, unknown>);

describe("Responses streams", () => {
  it("numbers a gateway-written error after the upstream's last sequence_number", () => {
    const reader = responsesPassthrough.createStream("m", REQUEST_ID, { model: "m", stream: true });
    const upstream =
      sse("response.created", { response: { id: "resp_1", model: "m" }, sequence_number: 0 }) +
      sse("response.in_progress", { response: { id: "resp_1", model: "m" }, sequence_number: 1 }) +
      sse("response.output_text.delta", { item_id: "msg_1", output_index: 0, delta: "Hi", sequence_number: 2 });
    const relayed = reader.push(Buffer.from(upstream));
    expect(parse(relayed).map((e) => e.sequence_number)).toEqual([0, 1, 2]);
    // The upstream broke off: the gateway's error frame continues the sequence.
    const broke = new GatewayError("upstream", "upstream_stream_error", "The upstream stream failed.");
    const frame = parse(reader.errorFrame(broke));
    expect(frame).toEqual([expect.objectContaining({ type: "error", sequence_number: 3 })]);
    expect(String(frame[0]!.message)).toContain(REQUEST_ID);
  });

  it("re-shapes an upstream error event in its own place of the sequence", () => {
    const reader = responsesPassthrough.createStream("m", REQUEST_ID, { model: "m", stream: true });
    reader.push(Buffer.from(sse("response.created", { response: { id: "r", model: "m" }, sequence_number: 0 })));
    const withNumber = parse(reader.push(Buffer.from(sse("error", { message: "boom", sequence_number: 1 }))));
    expect(withNumber[0]).toMatchObject({ type: "error", sequence_number: 1 });
    expect(String(withNumber[0]!.message)).toContain(REQUEST_ID);
    // One without a number of its own gets the next one.
    const other = responsesPassthrough.createStream("m", REQUEST_ID, { model: "m", stream: true });
    other.push(Buffer.from(sse("response.created", { response: { id: "r", model: "m" }, sequence_number: 4 })));
    expect(parse(other.push(Buffer.from(sse("error", { message: "boom" }))))[0]).toMatchObject({ sequence_number: 5 });
  });

  it("encodes interleaved argument deltas of two calls, each to its own item", async () => {
    const enc = createResponsesStreamEncoder({ model: "m", requestId: REQUEST_ID });
    const events: CanonicalStreamEvent[] = [
      { type: "start", id: "r1", model: "m", created: 1 },
      { type: "tool_call_start", index: 0, id: "call_a", name: "weather" },
      { type: "tool_call_start", index: 1, id: "call_b", name: "time" },
      { type: "tool_call_delta", index: 0, arguments: '{"city":' },
      { type: "tool_call_delta", index: 1, arguments: '{"zone":' },
      { type: "tool_call_delta", index: 0, arguments: '"Paris"}' },
      { type: "tool_call_delta", index: 1, arguments: '"CET"}' },
      { type: "finish", reason: "tool_calls" },
      { type: "end" },
    ];
    let text = events.map((e) => enc.encode(e)).join("");
    text += await enc.close!();
    const frames = parse(text);
    // An unbroken sequence.
    expect(frames.map((f) => f.sequence_number)).toEqual(frames.map((_, i) => i));
    const added = frames.filter((f) => f.type === "response.output_item.added");
    const ids = added.map((f) => (f.item as { id: string }).id);
    expect(added.map((f) => f.output_index)).toEqual([0, 1]);
    const deltas = frames.filter((f) => f.type === "response.function_call_arguments.delta");
    expect(deltas.map((d) => [d.output_index, d.item_id, d.delta])).toEqual([
      [0, ids[0], '{"city":'],
      [1, ids[1], '{"zone":'],
      [0, ids[0], '"Paris"}'],
      [1, ids[1], '"CET"}'],
    ]);
    const done = frames.filter((f) => f.type === "response.function_call_arguments.done");
    expect(done.map((d) => [d.output_index, d.arguments])).toEqual([
      [0, '{"city":"Paris"}'],
      [1, '{"zone":"CET"}'],
    ]);
    const completed = frames.find((f) => f.type === "response.completed")!.response as { output: unknown[] };
    expect(completed.output).toEqual([
      expect.objectContaining({ type: "function_call", call_id: "call_a", arguments: '{"city":"Paris"}' }),
      expect.objectContaining({ type: "function_call", call_id: "call_b", arguments: '{"zone":"CET"}' }),
    ]);

    // And an upstream that interleaves them reaches the canonical form intact.
    const dec = createResponsesStreamDecoder();
    const back = [...dec.push(Buffer.from(text)), ...dec.end()];
    const args = new Map<number, string>();
    for (const e of back) if (e.type === "tool_call_delta") args.set(e.index, (args.get(e.index) ?? "") + e.arguments);
    expect([...args.entries()]).toEqual([
      [0, '{"city":"Paris"}'],
      [1, '{"zone":"CET"}'],
    ]);
  });

  it("decodes deltas that name their call by output_index only", () => {
    const dec = createResponsesStreamDecoder();
    const text =
      sse("response.created", { response: { id: "r", model: "m" } }) +
      sse("response.output_item.added", {
        output_index: 0,
        item: { type: "function_call", id: "fc_a", call_id: "call_a", name: "a" },
      }) +
      sse("response.output_item.added", {
        output_index: 1,
        item: { type: "function_call", id: "fc_b", call_id: "call_b", name: "b" },
      }) +
      sse("response.function_call_arguments.delta", { output_index: 1, delta: '{"y":' }) +
      sse("response.function_call_arguments.delta", { output_index: 0, delta: '{"x":1}' }) +
      sse("response.function_call_arguments.delta", { item_id: "fc_b", delta: "2}" }) +
      sse("response.completed", { response: { status: "completed" } });
    const events = [...dec.push(Buffer.from(text)), ...dec.end()];
    expect(events.filter((e) => e.type === "tool_call_delta")).toEqual([
      { type: "tool_call_delta", index: 1, arguments: '{"y":' },
      { type: "tool_call_delta", index: 0, arguments: '{"x":1}' },
      { type: "tool_call_delta", index: 1, arguments: "2}" },
    ]);
    expect(events.find((e) => e.type === "finish")).toMatchObject({ reason: "tool_calls" });
  });
});
