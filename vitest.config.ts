import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Four projects:
// - unit: pure module tests beside the code (no Postgres or Redis needed), plus golden translator fixtures;
// - embedded: the single-process product (PGlite, in-process bus) driven end to end;
// - browser: the console in headless Chromium against the embedded product (needs console/dist and /usr/bin/chromium);
// - services: everything that needs the real Postgres and Redis (distributed mode, Redis-backed contracts).
// Inside the repository the packages import each other's TypeScript source (what the "modelgate-source" export
// condition names for tsc and tsx); production resolves the same import to the built JavaScript.
const dataPlaneSource = fileURLToPath(new URL("./data-plane/src/index.ts", import.meta.url));

export default defineConfig({
  resolve: { alias: [{ find: /^@modelgate\/data-plane$/, replacement: dataPlaneSource }] },
  test: {
    // One file at a time across all projects: the end-to-end files each start whole products (and Chromium)
    // on a 2-core machine, and their one-second propagation checks should not compete with each other.
    maxWorkers: 1,
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["data-plane/src/**/*.test.ts", "control-plane/src/**/*.test.ts", "test/unit/**/*.test.ts"],
          exclude: ["**/*.services.test.ts", "**/node_modules/**"],
          testTimeout: 20_000,
        },
      },
      {
        extends: true,
        test: {
          name: "embedded",
          include: ["test/embedded/**/*.test.ts"],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        extends: true,
        test: {
          name: "browser",
          include: ["test/browser/**/*.test.ts"],
          testTimeout: 180_000,
          hookTimeout: 240_000,
          fileParallelism: false,
        },
      },
      {
        extends: true,
        test: {
          name: "services",
          // test/security: one regression test per hardening item (issue 12); some need Postgres and Redis.
          include: ["**/src/**/*.services.test.ts", "test/services/**/*.test.ts", "test/security/**/*.test.ts"],
          exclude: ["**/node_modules/**"],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
