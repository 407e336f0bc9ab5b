import { createServer, get, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startEventStream } from "./relay.ts";

// The head of an event stream travels with its first chunk, or alone once the upstream is slow to send one.

let server: Server | null = null;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

/** Serves one event stream whose first chunk is written `firstChunkAfterMs` after the head; says when that happened. */
async function streamAfter(
  firstChunkAfterMs: number,
): Promise<{ res: IncomingMessage; chunkWritten: () => boolean; body: Promise<string> }> {
  let written = false;
  server = createServer((_req, res) => {
    const stream = startEventStream(res, { "content-type": "text/event-stream" });
    setTimeout(() => {
      stream.end();
      written = true;
      res.end("data: first\n\n");
    }, firstChunkAfterMs);
  });
  await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  const res = await new Promise<IncomingMessage>((resolve) => get(`http://127.0.0.1:${port}/`, resolve));
  const body = new Promise<string>((resolve) => {
    let text = "";
    res.setEncoding("utf8");
    res.on("data", (c: string) => (text += c));
    res.on("end", () => resolve(text));
  });
  return { res, chunkWritten: () => written, body };
}

describe("startEventStream", () => {
  it("sends the head alone when the first chunk is slow to come", async () => {
    // The head goes alone after 20 ms (HEAD_ALONE_AFTER_MS); the chunk comes long after, so that a pause of this
    // process (server and client both) on a loaded machine does not fire both timers in the same turn.
    const { res, chunkWritten, body } = await streamAfter(2_000);
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("text/event-stream");
    expect(chunkWritten()).toBe(false); // the head arrived while the upstream was still silent
    expect(await body).toBe("data: first\n\n");
  });

  it("sends the head with a first chunk that comes at once", async () => {
    const { res, chunkWritten, body } = await streamAfter(0);
    expect(chunkWritten()).toBe(true);
    expect(res.statusCode).toBe(200);
    expect(await body).toBe("data: first\n\n");
  });
});
