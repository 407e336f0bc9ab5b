import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_MOCK_KEY, type MockUpstream } from "../mocks/script.ts";
import { startOpenAIUpstream } from "../mocks/openai-upstream.ts";
import { admin, eventually, freePort, repoRoot, startTs, waitForHttp, type Proc } from "../helpers/processes.ts";
import { expectTableFits } from "./table-fit.ts";

// The operator's console (issue 18 §1) in real Chromium against the embedded product: open a customer with an
// owner, set a contract price, top up — the customer signs in and sees that price and balance; add an upstream
// (a mock OpenAI provider) and a route — a call goes through it and shows in the health page and the audit log.
// Screenshots of every operator page at 1280 and 375 px go to test/browser/screenshots/ (git-ignored). Every
// console page the browser loads must come with the console's Content-Security-Policy, and nothing may break
// under it.

const CHROMIUM = "/usr/bin/chromium";
const OPERATOR = { email: "operator@modelgate.local", password: "operator-password-1" };
const OWNER = { email: "owner@globex.test", password: "Globex-Owner-2026" };
const CONTRACT_MODEL = "demo-chat-2025-01-01";
const MOCK_MODEL = "mock-chat-2025-01-01";
const shots = join(repoRoot, "test/browser/screenshots");
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 375, height: 812 };

let dataDir: string;
let proc: Proc;
let base: string;
let env: Record<string, string>;
let browser: Browser;
let page: Page;
let mock: MockUpstream;
let customerId = "";
/** every console document the browser loaded, with its Content-Security-Policy header */
const documents: { path: string; csp: string | undefined }[] = [];
/** violations of the policy Chromium reported on any page */
const cspViolations: string[] = [];

function watchConsole(context: BrowserContext) {
  context.on("response", (r) => {
    if (r.request().resourceType() === "document" && r.url().startsWith(base))
      documents.push({ path: new URL(r.url()).pathname, csp: r.headers()["content-security-policy"] });
  });
  context.on("console", (m) => {
    if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
  });
}

async function nav(p: Page, label: string) {
  const link = p.getByRole("navigation", { name: "Console" }).getByRole("link", { name: label, exact: true });
  if (!(await link.isVisible())) await p.getByRole("button", { name: "Menu" }).click();
  await link.click();
}

async function signIn(p: Page, email: string, password: string) {
  await p.goto(`${base}/login`);
  await p.getByLabel("E-mail").fill(email);
  await p.getByLabel("Password").fill(password);
  await p.getByRole("button", { name: "Sign in" }).click();
}

/** The page at desktop and phone width (light at desktop, dark at phone width, as both themes must hold). */
async function screenshots(name: string) {
  await page.setViewportSize(DESKTOP);
  await page.screenshot({ path: join(shots, `operator-${name}-1280.png`), fullPage: true });
  await page.emulateMedia({ colorScheme: "dark" });
  await page.setViewportSize(PHONE);
  await page.screenshot({ path: join(shots, `operator-${name}-375.png`), fullPage: true });
  // nothing may stick out sideways at phone width
  const overflow = await page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
  expect(overflow, `${name} overflows at 375 px`).toBeLessThanOrEqual(1);
  await page.emulateMedia({ colorScheme: "light" });
  await page.setViewportSize(DESKTOP);
}

beforeAll(async () => {
  if (!existsSync(join(repoRoot, "console/dist/index.html"))) {
    throw new Error("the console is not built: run `npm run build -w console` first (npm test does)");
  }
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run bash .ci/browser-deps`);
  await mkdir(shots, { recursive: true });
  mock = await startOpenAIUpstream();
  dataDir = await mkdtemp(join(tmpdir(), "modelgate-operator-"));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  env = { PORT: String(port), MODELGATE_DATA_DIR: dataDir, MODELGATE_OPERATOR_PASSWORD: OPERATOR.password };
  proc = startTs("control-plane/src/main/embedded.ts", env);
  await waitForHttp(`${base}/readyz`, proc, 120_000);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
      "--disable-sync",
      "--disable-quic",
    ],
  });
  const context = await browser.newContext({ viewport: DESKTOP, colorScheme: "light" });
  watchConsole(context);
  page = await context.newPage();
  page.setDefaultTimeout(15_000);
});

afterAll(async () => {
  await browser?.close();
  await proc?.stop();
  await mock?.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe("operator console", () => {
  it("signs the operator in to the operator's pages", async () => {
    await signIn(page, OPERATOR.email, OPERATOR.password);
    await page.waitForURL(`${base}/ops/customers`);
    await page.getByRole("heading", { name: "Customers", level: 1 }).waitFor();
    expect(await page.getByTestId("account-name").textContent()).toBe("Operator");
    // a customer's page is not an operator's: sent back to the operator's start
    await page.goto(`${base}/keys`);
    await page.waitForURL(`${base}/ops/customers`);
  });

  it("creates a customer with an owner", async () => {
    await page.getByRole("button", { name: "New customer" }).click();
    await page.getByLabel("Account name").fill("globex");
    await page.getByLabel("Business contact e-mail").fill("billing@globex.test");
    await page.getByLabel("Owner e-mail").fill(OWNER.email);
    await page.getByLabel("Owner password").fill(OWNER.password);
    await page.getByRole("button", { name: "Create customer" }).click();
    await page.waitForURL(/\/ops\/customers\/[0-9a-f-]{36}$/);
    customerId = page.url().split("/").pop()!;
    await page.getByRole("heading", { name: "globex", level: 1 }).waitFor();
    expect(await page.getByTestId("customer-balance").textContent()).toBe("0.00");
    await page.getByRole("cell", { name: OWNER.email }).waitFor();
    await nav(page, "Customers");
    await page.getByTestId("customers-table").getByText("globex").waitFor();
    await screenshots("customers");
    await page.getByTestId("customers-table").getByRole("link", { name: "globex" }).click();
    await page.getByRole("heading", { name: "globex", level: 1 }).waitFor();
  });

  it("sets a contract price and tops the customer up with a note", async () => {
    await page.getByLabel("Model", { exact: true }).selectOption(CONTRACT_MODEL);
    await page.getByLabel("Input price", { exact: true }).fill("0.5");
    await page.getByLabel("Output price", { exact: true }).fill("1.25");
    await page.getByRole("button", { name: "Save contract price" }).click();
    await page.getByText("Contract price saved.").waitFor();
    await page.getByTestId("contracts-table").getByText(CONTRACT_MODEL).waitFor();

    await page.getByLabel("Amount (USD)").fill("42.5");
    await page.getByLabel("Note").fill("invoice 2026-114");
    await page.getByRole("button", { name: "Top up" }).click();
    await page.getByText("Topped up.").waitFor();
    await expect.poll(() => page.getByTestId("customer-balance").textContent()).toBe("42.50");
    await page.getByTestId("customer-ledger").getByText("invoice 2026-114").waitFor();

    // a bad adjustment names its problem and changes nothing
    await page.getByLabel("Kind").selectOption("adjustment");
    await page.getByLabel("Amount (USD)").fill("-2");
    await page.getByRole("button", { name: "Adjust" }).click();
    await page.getByRole("alert").filter({ hasText: "note" }).waitFor();
    expect(await page.getByTestId("customer-balance").textContent()).toBe("42.50");
    await screenshots("customer");
  });

  it("the customer signs in and sees the contract price and the balance", async () => {
    const context = await browser.newContext({ viewport: DESKTOP });
    watchConsole(context);
    const customer = await context.newPage();
    customer.setDefaultTimeout(15_000);
    await signIn(customer, OWNER.email, OWNER.password);
    await customer.waitForURL(`${base}/`);
    await customer.goto(`${base}/models`);
    const row = customer.getByTestId("models-table").getByRole("row").filter({ hasText: CONTRACT_MODEL });
    await row.waitFor();
    expect(await row.textContent()).toContain("0.50");
    expect(await row.textContent()).toContain("1.25");
    await customer.goto(`${base}/wallet`);
    await expect.poll(() => customer.getByTestId("wallet-balance").textContent()).toBe("42.50");
    // an operator page is not a customer's
    await customer.goto(`${base}/ops/customers`);
    await customer.waitForURL(`${base}/`);
    await context.close();
  });

  it("adds a model, an upstream and a route; a call goes through them", async () => {
    await nav(page, "Models & upstreams");
    await page.getByRole("heading", { name: "Models and upstreams", level: 1 }).waitFor();
    await page.getByLabel("Model ID").fill(MOCK_MODEL);
    await page.getByLabel("List input price").fill("1");
    await page.getByLabel("List output price").fill("2");
    await page.getByLabel("Strict translation").check();
    await page.getByRole("button", { name: "Save model" }).click();
    await page.getByText(`Model ${MOCK_MODEL} saved.`).waitFor();
    await page
      .getByTestId("models-table")
      .getByRole("row")
      .filter({ hasText: MOCK_MODEL })
      .getByText("strict")
      .waitFor();
    // A model with a fallback (docs/routing.md): listed after its routes.
    await page.getByLabel("Model ID").fill("mock-fallback-2025-01-01");
    await page.getByLabel("List input price").fill("1");
    await page.getByLabel("List output price").fill("2");
    await page.getByLabel("Fallbacks").fill(` ${CONTRACT_MODEL} `);
    await page.getByRole("button", { name: "Save model" }).click();
    await page.getByText("Model mock-fallback-2025-01-01 saved.").waitFor();
    expect(
      await page
        .getByTestId("models-table")
        .getByRole("row")
        .filter({ hasText: "mock-fallback-2025-01-01" })
        .getByTestId("model-fallbacks")
        .textContent(),
    ).toBe(`then ${CONTRACT_MODEL}`);

    await page.getByLabel("Upstream name").fill("mock-openai");
    await page.getByLabel("Protocol").selectOption("openai");
    await page.getByLabel("Base URL").fill(mock.url);
    await page.getByLabel("Credential").fill(DEFAULT_MOCK_KEY);
    await page.getByRole("button", { name: "Save upstream" }).click();
    await page.getByText("Upstream mock-openai saved.").waitFor();
    const upstreamRow = page.getByTestId("upstreams-table").getByRole("row").filter({ hasText: "mock-openai" });
    // write-only: the credential is never shown again, only that there is one
    expect(await upstreamRow.textContent()).toContain("set (hidden)");
    expect(await page.content()).not.toContain(DEFAULT_MOCK_KEY);

    await page.getByLabel("Route model").selectOption(MOCK_MODEL);
    await page.getByLabel("Route upstream").selectOption({ label: "mock-openai" });
    await page.getByLabel("Upstream model name").fill("gpt-mock");
    await page.getByLabel("Priority").fill("10");
    await page.getByLabel("Weight").fill("5");
    await page.getByRole("button", { name: "Save route" }).click();
    await page.getByText("Route saved.").waitFor();
    await page.getByTestId("routes-table").getByText("gpt-mock").waitFor();

    // A key pool (docs/routing.md): two keys, one of which the provider refuses; the secrets are write-only.
    await page.getByLabel("Upstream name").fill("mock-pool");
    await page.getByLabel("Protocol").selectOption("openai");
    await page.getByLabel("Base URL").fill(mock.url);
    await page.getByRole("button", { name: "Add a key" }).click();
    await page.getByRole("button", { name: "Add a key" }).click();
    await page.getByLabel("Key 1 id").fill("good");
    await page.getByLabel("Key 1 secret").fill(DEFAULT_MOCK_KEY);
    await page.getByLabel("Key 2 id").fill("revoked");
    await page.getByLabel("Key 2 secret").fill("sk-revoked-in-browser");
    await page.getByRole("button", { name: "Save upstream" }).click();
    await page.getByText("Upstream mock-pool saved.").waitFor();
    const poolKey = (id: string) => page.getByTestId("upstreams-table").getByTestId(`key-mock-pool-${id}`);
    await poolKey("good").getByText("active").waitFor();
    await poolKey("revoked").getByText("active").waitFor();
    expect(await page.content()).not.toContain("sk-revoked-in-browser");
    // the operator takes a key out and brings it back
    await page.getByRole("button", { name: "Disable key good of mock-pool" }).click();
    await poolKey("good").getByText("disabled").waitFor();
    expect(await poolKey("good").textContent()).toContain("by an operator");
    await page.getByRole("button", { name: "Enable key good of mock-pool" }).click();
    await poolKey("good").getByText("active").waitFor();
    await page.getByLabel("Route model").selectOption("mock-fallback-2025-01-01");
    await page.getByLabel("Route upstream").selectOption({ label: "mock-pool" });
    await page.getByLabel("Upstream model name").fill("gpt-pool");
    await page.getByRole("button", { name: "Save route" }).click();
    await page.getByText("Route saved.").waitFor();
    await screenshots("catalog");

    const key = await admin(env, "key", "create", "--account", "globex", "--name", "operator-test");
    expect(key.code, key.stderr).toBe(0);
    const apiKey = (key.json as { key: string }).key;
    // the data plane takes the new catalogue from the snapshot within a second or so
    const res = await eventually(
      () =>
        fetch(`${base}/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
          body: JSON.stringify({ model: MOCK_MODEL, messages: [{ role: "user", content: "through the new route" }] }),
        }).then(async (r) => ({ status: r.status, body: await r.text() })),
      (r) => r.status === 200,
      10_000,
      200,
    );
    expect(JSON.parse(res.body).choices[0].message.content).toBe("Hello from the mock.");
    expect(mock.requests.some((r) => (r.body as { model?: string }).model === "gpt-mock")).toBe(true);
    // Strict (set in the form above): a translated call refuses the hint it would otherwise drop, naming it.
    const calls = mock.requests.length;
    const strict = await fetch(`${base}/v1beta/models/${MOCK_MODEL}:generateContent`, {
      method: "POST",
      headers: { "x-goog-api-key": apiKey, "content-type": "application/json" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "x" }] }], generationConfig: { topK: 40 } }),
    });
    expect(strict.status).toBe(400);
    expect(await strict.text()).toContain("generationConfig.topK");
    expect(mock.requests.length).toBe(calls);
    // Through the pool: the revoked key's 401 never reaches the client, and takes the key out.
    const revoked = () => mock.requests.some((r) => r.headers.authorization === "Bearer sk-revoked-in-browser");
    for (let i = 0; i < 40 && !revoked(); i++) {
      const r = await fetch(`${base}/v1/chat/completions`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ model: "mock-fallback-2025-01-01", messages: [{ role: "user", content: `pool ${i}` }] }),
      });
      expect(r.status, await r.text()).toBe(200);
    }
    expect(revoked()).toBe(true);
  });

  it("shows the call in the upstream health and the usage across customers", async () => {
    await nav(page, "Health & usage");
    await page.getByRole("heading", { name: "Health and usage", level: 1 }).waitFor();
    const row = page.getByTestId("health-table").getByRole("row").filter({ hasText: "mock-openai" });
    await eventually(
      async () => {
        await page.getByRole("button", { name: "Refresh" }).click();
        return Promise.all(
          [0, 1, 2, 3].map(async (i) => ((await row.locator("td").nth(i).textContent()) ?? "").trim()),
        );
      },
      ([name = "", breaker, calls, errorRate]) =>
        name.startsWith("mock-openai") && breaker === "closed" && calls === "1" && errorRate === "0.0 %",
      15_000,
      300,
    );
    await page.getByTestId("usage-customer").getByText("globex").waitFor();
    // the pool's keys: the one the provider refused is disabled, with why
    const revokedKey = page.getByTestId("health-table").getByTestId("key-mock-pool-revoked");
    await eventually(
      async () => {
        await page.getByRole("button", { name: "Refresh" }).click();
        return (await revokedKey.textContent()) ?? "";
      },
      (t) => t.includes("disabled") && t.includes("refused (401)"),
      15_000,
      300,
    );
    await page.getByRole("button", { name: "Enable key revoked of mock-pool" }).waitFor();
    // at 1280 px the health table (with a key pool) and the usage tables fit their cards: no column out of view
    for (const table of ["health-table", "usage-customer", "usage-model", "usage-upstream"]) {
      await expectTableFits(page, table);
    }
    await screenshots("health");
  });

  it("lists users, and shows the audit log of every change", async () => {
    await nav(page, "Users");
    await page.getByTestId("users-table").getByText(OWNER.email).waitFor();
    await screenshots("users");

    await nav(page, "Audit log");
    await page.getByRole("heading", { name: "Audit log", level: 1 }).waitFor();
    const table = page.getByTestId("audit-table");
    for (const action of [
      "account.create",
      "price_contract.set",
      "account.topup",
      "upstream.create",
      "route.create",
      "auth.login",
    ]) {
      await table.getByText(action, { exact: true }).first().waitFor();
    }
    expect(await page.content()).not.toContain(DEFAULT_MOCK_KEY);
    expect(await page.content()).not.toContain(OWNER.password);
    await page.getByLabel("Action").fill("account.topup");
    await page.getByRole("button", { name: "Filter" }).click();
    await expect.poll(() => table.getByRole("row").count()).toBe(2); // header + the one top-up
    expect(await table.textContent()).toContain("invoice 2026-114");
    await page.getByRole("button", { name: "Export CSV" }).click();
    const link = page.getByTestId("audit-export-link");
    await link.waitFor();
    const csv = await page.evaluate(async (href) => (await fetch(href)).text(), (await link.getAttribute("href"))!);
    expect(csv.split("\r\n")[0]).toMatch(/^created_at,id,actor_type/);
    expect(csv).toContain("account.topup");
    await page.getByLabel("Action").fill("");
    await page.getByRole("button", { name: "Filter" }).click();
    await screenshots("audit");
    expect(customerId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("serves every console page it visited with the Content-Security-Policy, and nothing broke under it", async () => {
    // Each operator page loaded as a document (a reload, a link opened anew), not only by the app's router.
    const pages = ["/ops/customers", `/ops/customers/${customerId}`, "/ops/catalog", "/ops/health", "/ops/users"];
    for (const path of [...pages, "/ops/audit"]) {
      const res = await page.goto(`${base}${path}`);
      expect(res?.status(), path).toBe(200);
      await page.getByRole("heading", { level: 1 }).first().waitFor();
    }
    const visited = new Set(documents.map((d) => d.path));
    for (const path of ["/login", "/keys", "/models", "/wallet", ...pages, "/ops/audit"])
      expect(visited.has(path), `${path} was loaded`).toBe(true);
    for (const d of documents) {
      expect(d.csp, d.path).toContain("default-src 'self'");
      expect(d.csp, d.path).toContain("script-src 'self'");
      expect(d.csp, d.path).toContain("frame-ancestors 'none'");
      expect(d.csp, d.path).not.toContain("'unsafe-eval'");
    }
    expect(cspViolations.slice(0, 3)).toEqual([]);
  });
});
