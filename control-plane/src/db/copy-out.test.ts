import type { Pool } from "pg";
import { describe, expect, it } from "vitest";
import { copyOutFrom, MAX_COPIES } from "./copy-out.ts";

/** A pool whose COPY streams each yield one chunk once `open` is called, recording connections and releases. */
function fakePool() {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const state = {
    connected: 0,
    streaming: 0,
    most: 0,
    released: [] as (boolean | undefined)[],
    statements: [] as string[],
  };
  const pool = {
    connect: async () => {
      state.connected++;
      return {
        query: (q: unknown) => {
          if (typeof q === "string") {
            state.statements.push(q);
            return Promise.resolve();
          }
          return (async function* () {
            state.streaming++;
            state.most = Math.max(state.most, state.streaming);
            await gate;
            yield Buffer.from("a");
            yield Buffer.from("b");
            state.streaming--;
          })();
        },
        release: (destroy?: boolean) => void state.released.push(destroy),
      };
    },
  } as unknown as Pool;
  return { pool, state, open: () => open() };
}

const settle = async (until: () => boolean) => {
  for (let i = 0; i < 1000 && !until(); i++) await new Promise((resolve) => setImmediate(resolve));
};

describe("copyOut", () => {
  it("runs at most MAX_COPIES at once; the others wait for a connection, then stream in turn", async () => {
    const { pool, state, open } = fakePool();
    const copyOut = copyOutFrom(pool);
    const read = async () => {
      const chunks: string[] = [];
      for await (const c of copyOut("COPY (SELECT 1) TO STDOUT")) chunks.push(c.toString());
      return chunks.join("");
    };
    const reads = Array.from({ length: MAX_COPIES + 1 }, read);
    await settle(() => state.streaming === MAX_COPIES);
    await settle(() => state.connected > MAX_COPIES); // given the chance, the last would connect now
    expect(state.connected).toBe(MAX_COPIES);
    open();
    expect(await Promise.all(reads)).toEqual(Array(MAX_COPIES + 1).fill("ab"));
    expect(state.most).toBe(MAX_COPIES);
    expect(state.connected).toBe(MAX_COPIES + 1);
    expect(state.released).toEqual(Array(MAX_COPIES + 1).fill(undefined)); // returned to the pool
    expect(state.statements.filter((s) => s === "SET LOCAL jit = off")).toHaveLength(MAX_COPIES + 1);
  });

  it("ends the connection of a COPY its reader left early, and lets the next one in", async () => {
    const { pool, state, open } = fakePool();
    const copyOut = copyOutFrom(pool);
    open();
    for await (const c of copyOut("COPY (SELECT 1) TO STDOUT")) if (c.toString() === "a") break;
    expect(state.released).toEqual([true]); // not returned with a COPY still running
    const rest: string[] = [];
    for (let i = 0; i < MAX_COPIES; i++)
      for await (const c of copyOut("COPY (SELECT 1) TO STDOUT")) rest.push(c.toString());
    expect(rest.join("")).toBe("ab".repeat(MAX_COPIES));
  });
});
