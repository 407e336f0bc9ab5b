// `node --import ./bench/portkey/stream-hook.mjs …/start-server.js`: Portkey's gateway with @hono/node-server
// 1.14.1 (the `hono-node-server-stream` alias in package.json) instead of the version a plain install
// resolves, whose streaming answers 500 "TypeError: immutable" (Portkey issues #1389 and #1550). Only the
// bench's streaming runs use it; non-streaming is timed on the plain install.
import { register } from "node:module";

register("./stream-resolve.mjs", import.meta.url);
