import { afterEach, describe, expect, it, vi } from "vitest";
import type { UsageEvent } from "../contract/index.ts";
import { Call } from "./call.ts";
import type { DataPlaneOptions } from "./context.ts";

// The accounting of one call when the client cuts its stream: charged by estimate at once, then by the
// upstream's exact usage, once; the upstream is stopped when none comes within the drain time.

function setup(drainMs = 1_000) {
  const events: UsageEvent[] = [];
  const spend: bigint[] = [];
  const opts = {
    usage: { emit: (e: UsageEvent) => void events.push(e) },
    spend: { add: async (_k: unknown, _a: unknown, micro: bigint) => void spend.push(micro) },
    metrics: { call: () => undefined, firstByte: () => undefined },
    logger: { warn: () => undefined },
    cutStreamDrainMs: drainMs,
  } as unknown as DataPlaneOptions;
  const admission = {
    model: {},
    price: { input: "1000000", output: "2000000", cachedInput: null },
    grant: { release: async () => undefined },
    headers: {},
    estimatedPromptTokens: 40,
  };
  const record = {
    requestId: "r1",
    keyId: "k",
    accountId: "a",
    model: "m",
    protocol: "openai" as const,
    upstream: "u",
    stream: true,
    clientIp: null,
    startedAt: Date.now(),
    firstByteAt: null,
  };
  const call = new Call(opts, { key: {}, account: {}, clientIp: null } as never, admission as never, record);
  call.answered(); // the upstream's status line came
  call.streaming = true;
  call.firstByte();
  return { call, events, spend, admission };
}

const usage = (prompt: number, completion: number) => ({
  promptTokens: prompt,
  completionTokens: completion,
  reasoningTokens: 0,
  cachedTokens: 0,
});

afterEach(() => {
  vi.useRealTimers();
});

describe("Call.cut", () => {
  it("charges the estimate, then the exact usage once, and the spend by the difference", async () => {
    const { call, events, spend } = setup();
    call.observe({ type: "start", id: "x", model: "m", created: 0, usage: usage(100, 1) }); // a partial count
    call.observe({ type: "text", text: "a".repeat(40) }); // 10 tokens delivered
    const stop = vi.fn();
    call.cut(stop);
    expect(stop).not.toHaveBeenCalled(); // the upstream is still read
    expect(events).toHaveLength(1);
    // the upstream's prompt, the delivered output (more than its partial count of 1): 100 × 1 + 10 × 2
    expect(events[0]).toMatchObject({
      requestId: "r1",
      status: 499,
      estimated: true,
      promptTokens: 100,
      completionTokens: 10,
      cost: "120",
    });
    // the estimate is the request's first event: not marked, so settlement may insert it in bulk
    expect(events[0]!.maybeSettled).toBeFalsy();

    call.observe({ type: "usage", usage: usage(100, 50) });
    call.usageComplete = true; // the relay saw the upstream's end
    await call.finish(200);
    expect(events[1]).toMatchObject({
      requestId: "r1",
      status: 499,
      errorCode: "client_closed",
      estimated: false,
      completionTokens: 50,
      cost: "200",
      // the estimate's row may be in the log already: settlement must check for it
      maybeSettled: true,
    });
    await call.finish(200); // a second end changes nothing
    expect(events).toHaveLength(2);
    expect(spend).toEqual([120n, 80n]);
  });

  it("stops the upstream when no exact usage comes within the drain time, and the estimate stands", async () => {
    vi.useFakeTimers();
    const { call, events } = setup(500);
    call.observe({ type: "text", text: "abcd" });
    const stop = vi.fn();
    call.cut(stop);
    expect(events[0]).toMatchObject({ estimated: true, promptTokens: 40, completionTokens: 1 });
    vi.advanceTimersByTime(499);
    expect(stop).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(stop).toHaveBeenCalledOnce();
    await call.finish(499, "client_closed"); // the aborted relay ends
    expect(events).toHaveLength(1);
  });

  it("stops at once when the usage was complete before the client left, or the call was already accounted", () => {
    const done = setup();
    done.call.setUsage(usage(10, 10));
    done.call.usageComplete = true;
    const stop = vi.fn();
    done.call.cut(stop);
    expect(stop).toHaveBeenCalledOnce();
    expect(done.events[0]).toMatchObject({ estimated: false, cost: "30" });

    const finished = setup();
    void finished.call.finish(200);
    const stop2 = vi.fn();
    finished.call.cut(stop2);
    expect(stop2).toHaveBeenCalledOnce();
    expect(finished.events).toHaveLength(1);
  });
});

describe("what a call the upstream answered costs", () => {
  it("a cut before any output is charged the prompt's estimate, and the upstream is still read", () => {
    const { call, events } = setup();
    const stop = vi.fn();
    call.cut(stop); // the client read the status line (or a role-only chunk) and left
    expect(stop).not.toHaveBeenCalled();
    expect(events[0]).toMatchObject({
      status: 499,
      estimated: true,
      promptTokens: 40,
      completionTokens: 0,
      cost: "40",
    });
  });

  it("a call the upstream never answered is not charged, and a client gone before the answer does not stop it", () => {
    vi.useFakeTimers();
    const { call, events } = setup(500);
    const fresh = new Call((call as unknown as { opts: DataPlaneOptions }).opts, call.caller, call.admission, {
      ...call.record,
      firstByteAt: null,
    });
    const stop = vi.fn();
    fresh.leave(stop);
    vi.advanceTimersByTime(10_000); // no drain before the status line: the route's own timeouts bound it
    expect(stop).not.toHaveBeenCalled();
    fresh.answered();
    vi.advanceTimersByTime(500);
    expect(stop).toHaveBeenCalledOnce();
    void fresh.finish(502, "upstream_stream_error");
    expect(events[0]).toMatchObject({ status: 502, estimated: true, promptTokens: 40, cost: "40" });

    const refused = setup();
    const unanswered = new Call(
      (refused.call as unknown as { opts: DataPlaneOptions }).opts,
      refused.call.caller,
      refused.call.admission,
      { ...refused.call.record },
    );
    void unanswered.finish(502, "upstream_error");
    expect(refused.events[0]).toMatchObject({ status: 502, cost: "0" });
  });

  it.each([
    ["a fraction", { ...usage(10, 5), promptTokens: 10.5 }],
    ["a negative count", usage(-1000, 5)],
    ["NaN", { ...usage(10, 5), completionTokens: NaN }],
    ["past 2^53", usage(2 ** 53, 5)],
  ])("a usage report with %s is billed by estimate, never below 0", (_name, reported) => {
    const { call, events } = setup();
    call.observe({ type: "text", text: "a".repeat(40) });
    call.setUsage(reported);
    call.usageComplete = true;
    void call.finish(200);
    expect(events[0]).toMatchObject({ estimated: true, promptTokens: 40, completionTokens: 10, cost: "60" });
  });

  it("gives the rate-limit slot back even when accounting throws", () => {
    const { call, admission } = setup();
    const release = vi.fn(async () => undefined);
    admission.grant.release = release;
    (call as unknown as { opts: { usage: unknown } }).opts.usage = {
      emit: () => {
        throw new Error("boom");
      },
    };
    expect(() => call.finish(200)).toThrow("boom");
    expect(release).toHaveBeenCalledOnce();
  });
});
