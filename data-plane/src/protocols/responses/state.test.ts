import { describe, expect, it } from "vitest";
import { MemoryConversationStore } from "../../conversations/store.ts";
import { GatewayError } from "../../errors.ts";
import { openResponsesSession } from "./state.ts";

// Conversation state of the Responses API: off, a reference is a 400 that says to send the full input; on,
// references expand from the account's own records only, and store: false keeps nothing.

const store = () => new MemoryConversationStore({ masterKey: Buffer.alloc(32, 7), ttlMs: 60_000 });
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e as GatewayError,
  );

describe("Responses conversation state", () => {
  it("with storing off, previous_response_id and item references are refused: send the full input", async () => {
    for (const body of [
      { model: "m", input: "hi", previous_response_id: "resp_abc" },
      { model: "m", input: [{ type: "item_reference", id: "msg_abc_0" }] },
    ]) {
      const s = openResponsesSession(body, null, "acc-1");
      expect(s.refersToState).toBe(true);
      expect(s.commit).toBeUndefined();
      const err = await refusal(s.expand());
      expect(err).toBeInstanceOf(GatewayError);
      expect(err).toMatchObject({ status: 400, code: "stored_responses_disabled" });
      expect(err!.message).toContain("send the full conversation in 'input'");
    }
  });

  it("a request that refers to nothing needs no store and parses as it is", async () => {
    const body = { model: "m", input: "hi" };
    const s = openResponsesSession(body, null, "acc-1");
    expect(s.refersToState).toBe(false);
    expect(await s.expand()).toBe(body);
  });

  it("expands the previous conversation and item references of the same account only", async () => {
    const st = store();
    const first = openResponsesSession({ model: "m", input: "My name is Ada." }, st, "acc-1");
    await first.expand();
    const output = [
      { type: "message", id: "msg_aa01_0", role: "assistant", content: [{ type: "output_text", text: "Hello Ada." }] },
    ];
    await first.commit!({ id: "resp_aa01", output });
    const next = openResponsesSession({ model: "m", input: "Name?", previous_response_id: "resp_aa01" }, st, "acc-1");
    expect(next.withoutState).toEqual({ model: "m", input: [{ role: "user", content: "Name?" }] });
    expect((await next.expand()).input).toEqual([
      { role: "user", content: "My name is Ada." },
      output[0],
      { role: "user", content: "Name?" },
    ]);
    const ref = openResponsesSession(
      { model: "m", input: [{ type: "item_reference", id: "msg_aa01_0" }] },
      st,
      "acc-1",
    );
    expect((await ref.expand()).input).toEqual([output[0]]);
    // Another account's id is not found, whether continued or referenced.
    expect(
      await refusal(
        openResponsesSession({ model: "m", input: "x", previous_response_id: "resp_aa01" }, st, "acc-2").expand(),
      ),
    ).toMatchObject({ status: 404 });
    expect(
      await refusal(
        openResponsesSession(
          { model: "m", input: [{ type: "item_reference", id: "msg_aa01_0" }] },
          st,
          "acc-2",
        ).expand(),
      ),
    ).toMatchObject({ status: 404 });
  });

  it("store: false keeps nothing", () => {
    expect(openResponsesSession({ model: "m", input: "x", store: false }, store(), "acc-1").commit).toBeUndefined();
  });
});
