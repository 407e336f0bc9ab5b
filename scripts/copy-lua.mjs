// Part of the data plane's build: tsc emits only JavaScript, so the Redis scripts (src/**/*.lua) are copied
// beside it into dist/, where the built modules read them.
import { cpSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../data-plane/", import.meta.url));
cpSync(`${root}src/ratelimit/lua`, `${root}dist/ratelimit/lua`, { recursive: true });
