import { existsSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdir, mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Secret, TOTP } from "otpauth";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verify } from "../../control-plane/src/alerts/signature.ts";
import { admin, eventually, freePort, repoRoot, startTs, waitForHttp, type Proc } from "../helpers/processes.ts";
import { expectTableFits } from "./table-fit.ts";

// The customer console in real Chromium against the product in embedded mode (`npm start`): sign-in with two-step
// verification, an expired session, a restricted key used against the API, the usage log, chart and export, and
// revocation; plus screenshots of every page at desktop and phone width.

const CHROMIUM = "/usr/bin/chromium";
const DEMO_MODEL = "demo-chat-2025-01-01";
const EMAIL = "owner@acme.test";
const PASSWORD = "Correct-Horse-42";
const NEW_PASSWORD = "Battery-Staple-4242";
const shots = join(repoRoot, "test/browser/screenshots");
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 375, height: 812 };
/** committed for the README; rewritten only when missing or with UPDATE_DOCS_SCREENSHOT=1 */
const docsShot = join(repoRoot, "docs/dashboard.png");

let dataDir: string;
let proc: Proc;
let base: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let totp: TOTP;
let recoveryCodes: string[] = [];
let apiKey = "";
let requestId = "";
const cspViolations: string[] = [];

async function signIn(p: Page, code?: string) {
  await p.getByLabel("E-mail").fill(EMAIL);
  await p.getByLabel("Password").fill(PASSWORD);
  await p.getByRole("button", { name: "Sign in" }).click();
  if (code !== undefined) {
    await p.getByRole("heading", { name: "Two-step verification" }).waitFor();
    await p.getByLabel("Verification code").fill(code);
    await p.getByRole("button", { name: "Verify" }).click();
  }
}

async function nav(p: Page, label: string) {
  const link = p.getByRole("navigation", { name: "Console" }).getByRole("link", { name: label, exact: true });
  if (!(await link.isVisible())) await p.getByRole("button", { name: "Menu" }).click();
  await link.click();
}

async function callApi(key: string): Promise<Response> {
  return fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "x-modelgate-tags": "team=browser" },
    body: JSON.stringify({
      model: DEMO_MODEL,
      messages: [{ role: "user", content: "Hello from the browser test" }],
      user: "browser-user",
    }),
  });
}

beforeAll(async () => {
  if (!existsSync(join(repoRoot, "console/dist/index.html"))) {
    throw new Error("the console is not built: run `npm run build -w console` first (npm test does)");
  }
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run bash .ci/browser-deps`);
  await mkdir(shots, { recursive: true });
  dataDir = await mkdtemp(join(tmpdir(), "modelgate-browser-"));
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const env = {
    PORT: String(port),
    MODELGATE_DATA_DIR: dataDir,
    MODELGATE_OPERATOR_PASSWORD: "operator-password-1",
    // the test's webhook receiver listens on 127.0.0.1
    MODELGATE_WEBHOOK_ALLOW_PRIVATE: "1",
  };
  proc = startTs("control-plane/src/main/embedded.ts", env);
  await waitForHttp(`${base}/readyz`, proc, 120_000);
  const account = await admin(env, "account", "create", "--name", "acme", "--balance", "10");
  expect(account.code, account.stderr).toBe(0);
  const user = await admin(
    env,
    "user",
    "create",
    "--email",
    EMAIL,
    "--password",
    PASSWORD,
    "--role",
    "owner",
    "--account",
    "acme",
  );
  expect(user.code, user.stderr).toBe(0);

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
  context = await browser.newContext({ viewport: DESKTOP, acceptDownloads: true, colorScheme: "light" });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
  page = await context.newPage();
  // the Content-Security-Policy must not break the console: every violation Chromium reports is kept
  page.on("console", (m) => {
    if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
  });
  page.setDefaultTimeout(15_000);
});

afterAll(async () => {
  await browser?.close();
  await proc?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe("customer console", () => {
  it("sends a visitor to the sign-in page and refuses a wrong password", async () => {
    await page.goto(`${base}/keys`);
    await page.waitForURL(/\/login\?next=(%2F|\/)keys$/);
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByText("Enter your e-mail address.").isVisible()).toBe(true);
    await page.getByLabel("E-mail").fill(EMAIL);
    await page.getByLabel("Password").fill("not-the-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").filter({ hasText: "wrong e-mail or password" }).waitFor();
    expect(page.url()).toContain("/login");
  });

  it("signs in and returns to the page asked for", async () => {
    await signIn(page);
    await page.waitForURL(`${base}/keys`);
    await page.getByRole("heading", { name: "API keys", level: 1 }).waitFor();
    await page.getByText("No keys yet").waitFor();
    expect(await page.getByTestId("account-name").textContent()).toBe("acme");
  });

  it("turns on two-step verification with a QR code and recovery codes", async () => {
    await nav(page, "Security");
    await page.getByRole("button", { name: "Set up two-step verification" }).click();
    const qr = await page.getByTestId("totp-qr").getAttribute("src");
    expect(qr).toMatch(/^data:image\/png;base64,/);
    const secret = (await page.getByTestId("totp-secret").textContent())!.trim();
    totp = new TOTP({ algorithm: "SHA1", digits: 6, period: 30, secret: Secret.fromBase32(secret) });

    await page.getByLabel("Code from the app").fill("000000" === totp.generate() ? "111111" : "000000");
    await page.getByRole("button", { name: "Turn on" }).click();
    await page.getByRole("alert").filter({ hasText: "The code is not valid" }).waitFor();

    await page.getByLabel("Code from the app").fill(totp.generate());
    await page.getByRole("button", { name: "Turn on" }).click();
    const list = page.getByTestId("recovery-codes").locator("li");
    await list.first().waitFor();
    recoveryCodes = (await list.allTextContents()).map((c) => c.trim());
    expect(recoveryCodes).toHaveLength(10);
    // The status follows the session's refetch, which may land just after the codes show: wait for it.
    await page.locator('[data-testid="twostep-status"]:text-is("on")').waitFor({ timeout: 10_000 });
    expect(await page.getByTestId("twostep-status").textContent()).toBe("on");
    await page.getByRole("button", { name: "I have saved them" }).click();
    await page.getByTestId("recovery-left").filter({ hasText: "10 recovery codes left" }).waitFor();
  });

  it("signs out, then signs in again with a code from the authenticator", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/login\?reason=signed-out/);
    await page.getByText("You have signed out.").waitFor();
    await page.goto(`${base}/`);
    await page.waitForURL(/\/login/);

    await signIn(page, "123 456");
    await page.getByRole("alert").filter({ hasText: "not valid" }).waitFor();
    // A code is good once, and turning two-step on used the current one: the next period's code (accepted for
    // clock drift) signs in.
    await page.getByLabel("Verification code").fill(totp.generate({ timestamp: Date.now() + 30_000 }));
    await page.getByRole("button", { name: "Verify" }).click();
    await page.getByRole("heading", { name: "Dashboard", level: 1 }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/");
  });

  it("sends an expired session to the sign-in page with a message, and back after signing in", async () => {
    await context.addCookies([{ name: "mg_session", value: "expired-session-token", url: base }]);
    await nav(page, "Wallet");
    await page.waitForURL(/\/login\?reason=expired&next=%2Fwallet$/);
    await page.getByTestId("session-expired").filter({ hasText: "Your session has expired" }).waitFor();
    // a recovery code works once in place of the app's code
    await signIn(page, recoveryCodes[0]!);
    await page.waitForURL(`${base}/wallet`);
    await page.getByRole("heading", { name: "Wallet", level: 1 }).waitFor();
    expect(await page.getByTestId("wallet-balance").textContent()).toBe("10.00");
  });

  it("creates a restricted key and shows it once with a copy button", async () => {
    await nav(page, "API keys");
    await page.getByRole("button", { name: "Create key" }).first().click();
    const editor = page.locator("#key-editor");
    await editor.getByLabel("Quota cap").fill("0");
    await editor.getByLabel("IP allowlist").fill("127.0.0.1\n300.1.1.1");
    await editor.getByRole("button", { name: "Create key" }).click();
    await editor.getByText("Give the key a name").waitFor();
    await editor.getByText("The cap must be more than zero").waitFor();
    await editor.getByText("Not an IP address or CIDR range: 300.1.1.1").waitFor();

    const tomorrow = new Date(Date.now() + 86_400_000);
    const pad = (n: number) => String(n).padStart(2, "0");
    const local = `${tomorrow.getFullYear()}-${pad(tomorrow.getMonth() + 1)}-${pad(tomorrow.getDate())}T${pad(tomorrow.getHours())}:${pad(tomorrow.getMinutes())}`;
    await editor.getByLabel("Name").fill("ci-bot");
    await editor.getByLabel("Quota cap").fill("1.5");
    await editor.getByLabel("Expires").fill(local);
    await editor.getByRole("checkbox", { name: DEMO_MODEL }).check();
    await editor.getByLabel("IP allowlist").fill("127.0.0.1\n::1\n10.0.0.0/8");
    await editor.getByLabel("Requests / minute").fill("60");
    await editor.getByLabel("Tokens / minute").fill("100000");
    await editor.getByLabel("Concurrent requests").fill("4");
    await editor.getByRole("button", { name: "Create key" }).click();

    const reveal = page.getByTestId("new-key");
    await reveal.waitFor();
    apiKey = (await page.getByTestId("new-key-value").textContent())!.trim();
    expect(apiKey).toMatch(/^sk-/);
    await reveal.getByText("it is shown only once").waitFor();
    await reveal.getByRole("button", { name: /Copy key/ }).click();
    await reveal.getByText("Copied", { exact: true }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(apiKey);
    await page.screenshot({ path: join(shots, "keys-new-1280.png") });

    await reveal.getByRole("button", { name: "I have stored the key" }).click();
    await expect.poll(() => reveal.count()).toBe(0);
    const row = page.locator('tr[data-key-name="ci-bot"]');
    await row.getByText("Active").waitFor();
    const text = await row.textContent();
    expect(text).toContain("1.50");
    expect(text).toContain(DEMO_MODEL);
    expect(text).toContain("60 rpm");
    expect(text).toContain("127.0.0.1, ::1, 10.0.0.0/8");
    expect(await page.content()).not.toContain(apiKey);
  });

  it("edits a key's restrictions", async () => {
    const row = page.locator('tr[data-key-name="ci-bot"]');
    await row.getByRole("button", { name: "Edit ci-bot" }).click();
    const editor = page.locator("#key-editor");
    expect(await editor.getByLabel("Name").inputValue()).toBe("ci-bot");
    expect(await editor.getByLabel("Quota cap").inputValue()).toBe("1.5");
    await editor.getByLabel("Requests / minute").fill("120");
    await editor.getByRole("button", { name: "Save changes" }).click();
    await page.getByText("Saved the restrictions of “ci-bot”").waitFor();
    await row.getByText("120 rpm").waitFor();
  });

  it("the key calls the API, and the call shows in the usage log and on the dashboard", async () => {
    const res = await eventually(
      () => callApi(apiKey),
      (r) => r.status === 200,
      5_000,
    );
    const body = (await res.json()) as { usage?: { total_tokens: number } };
    expect(body.usage?.total_tokens).toBeGreaterThan(0);
    requestId = res.headers.get("x-gateway-request-id") ?? "";
    expect(requestId).not.toBe("");

    await nav(page, "Usage log");
    const row = page.locator(`tr[data-request-id="${requestId}"]`);
    await expect
      .poll(
        async () => {
          if (await row.count()) return true;
          await page.getByRole("button", { name: "Refresh" }).click();
          return false;
        },
        { timeout: 15_000, interval: 500 },
      )
      .toBe(true);
    // at 1280 px the log fits its card: the last column is in view, not behind a sideways scroll
    await expectTableFits(page, "usage-table");
    const text = await row.textContent();
    expect(text).toContain(DEMO_MODEL);
    expect(text).toContain("ci-bot");
    expect(text).toContain("200");
    // cost attribution: the end user and the tag on the row, and spend grouped by them
    expect(text).toContain("browser-user");
    expect(text).toContain("team=browser");
    await page.getByTestId("attribution").getByRole("cell", { name: "browser-user" }).waitFor();
    await page.getByLabel("Group by").selectOption("tag");
    await page.getByTestId("attribution").getByRole("cell", { name: "team=browser" }).waitFor();
    await page.getByLabel("Tag").fill("team=other");
    await page.getByLabel("Tag").press("Enter");
    await page.getByText("No calls match these filters").waitFor();
    await page.getByRole("button", { name: "Clear filters" }).click();
    await row.waitFor();

    await page.getByLabel("Result").selectOption("failed");
    await page.getByText("No calls match these filters").waitFor();
    await page.getByRole("button", { name: "Clear filters" }).click();
    await row.waitFor();

    await nav(page, "Dashboard");
    await page.getByTestId("requests-total").filter({ hasText: "1" }).waitFor();
    const chart = page.getByTestId("usage-chart");
    expect(await chart.getAttribute("aria-label")).toMatch(/^Requests: 1 in total over 7 days/);
    await page.getByRole("button", { name: "Tokens", exact: true }).click();
    await expect
      .poll(() => chart.getAttribute("aria-label"))
      .toMatch(new RegExp(`^Tokens: ${body.usage!.total_tokens} in total`));
    await page.getByLabel("Period").selectOption("24h");
    await expect.poll(() => chart.getAttribute("aria-label")).toMatch(/over 24 hours/);
    await page.getByTestId("top-keys").getByText("ci-bot").waitFor();
    await page.getByTestId("top-models").getByText(DEMO_MODEL).waitFor();
    expect(await page.getByTestId("balance").textContent()).not.toBe("10.00");

    await page.getByLabel("Period").selectOption("7d");
    await page.getByRole("button", { name: "Requests", exact: true }).click();
    await expect.poll(() => chart.getAttribute("aria-label")).toMatch(/^Requests: 1 in total over 7 days/);

    // the wallet's ledger: the call settled in a usage line of its batch, with its number of calls
    await nav(page, "Wallet");
    const calls = page.getByTestId("ledger-table").getByTestId("ledger-calls").first();
    await expect
      .poll(async () => ((await calls.textContent()) ?? "").replace(/\s+/g, " ").trim())
      .toMatch(/^\d+ calls?$/);
    await nav(page, "Dashboard");
    if (!existsSync(docsShot) || process.env.UPDATE_DOCS_SCREENSHOT) {
      await mkdir(join(repoRoot, "docs"), { recursive: true });
      await page.screenshot({ path: docsShot });
    }
    expect((await stat(docsShot)).size).toBeLessThan(300_000);
  });

  it("sets a key's daily budget and shows what is left; adds a webhook and sends it a signed test alert", async () => {
    await nav(page, "API keys");
    const row = page.locator('tr[data-key-name="ci-bot"]');
    await row.getByRole("button", { name: "Budgets of ci-bot" }).click();
    const form = page.getByTestId("key-budgets");
    await form.getByLabel("Daily").fill("1");
    await form.getByRole("button", { name: "Save budgets" }).click();
    await page.getByText("Saved the budgets of “ci-bot”").waitFor();
    await row.getByText("left of 1.00").waitFor();

    const received: { headers: Record<string, string | string[] | undefined>; body: string }[] = [];
    const receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString("utf8")));
      req.on("end", () => {
        received.push({ headers: req.headers, body });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    try {
      await nav(page, "Budgets & alerts");
      const hooks = page.getByTestId("webhooks");
      await hooks.getByLabel("URL").fill(`http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`);
      await hooks.getByRole("button", { name: "Add webhook" }).click();
      const secret = (await page.getByTestId("webhook-secret").locator("code.secret").textContent())!.trim();
      expect(secret).toMatch(/^whsec_/);
      await hooks.getByRole("button", { name: "Send test" }).click();
      await page.getByText("Test alert delivered (HTTP 204)").waitFor();
      // sent once (a budget alert may come to the new webhook as well: it is not this test's)
      const tests = received.filter((r) => r.headers["x-modelgate-event"] === "test");
      expect(tests).toHaveLength(1);
      const r = tests[0]!;
      expect(
        verify(secret, String(r.headers["x-modelgate-timestamp"]), r.body, String(r.headers["x-modelgate-signature"])),
      ).toBe(true);
      await page.getByTestId("deliveries").getByText("delivered").waitFor();

      const settings = page.getByTestId("alert-settings");
      await settings.getByLabel("Balance below").fill("5");
      await settings.getByRole("button", { name: "Save alerts" }).click();
      await page.getByText("Saved the alert settings.").waitFor();
    } finally {
      await new Promise<void>((r) => receiver.close(() => r()));
    }
  });

  it("exports the usage log and downloads the file", async () => {
    await nav(page, "Usage log");
    await page.locator(`tr[data-request-id="${requestId}"]`).waitFor();
    for (const format of ["CSV", "JSONL"] as const) {
      await page.getByLabel("Export the filtered log as").selectOption(format);
      const downloading = page.waitForEvent("download", { timeout: 30_000 });
      await page.getByTestId("export-button").click();
      const download = await downloading;
      expect(download.url()).toMatch(/\/api\/exports\/[0-9a-f-]{36}\/download$/);
      expect(download.suggestedFilename()).toMatch(format === "CSV" ? /\.csv$/ : /\.jsonl$/);
      const file = await readFile((await download.path())!, "utf8");
      expect(file).toContain(requestId);
      expect(file).not.toContain("Hello from the browser test");
      if (format === "JSONL") {
        const rows = file
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as Record<string, unknown>);
        expect(rows.some((r) => Object.values(r).includes(requestId))).toBe(true);
      }
      await page.getByTestId("export-progress").filter({ hasText: "Export ready: 1 rows" }).waitFor();
    }
  });

  it("revokes the key after a confirmation, and the API refuses it", async () => {
    await nav(page, "API keys");
    const row = page.locator('tr[data-key-name="ci-bot"]');
    await row.getByRole("button", { name: "Revoke ci-bot" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText("cannot be undone").waitFor();
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await expect.poll(() => dialog.isVisible()).toBe(false);
    expect(await row.textContent()).toContain("Active");

    await row.getByRole("button", { name: "Revoke ci-bot" }).click();
    await dialog.getByRole("button", { name: "Revoke key" }).click();
    await row.getByText("Revoked", { exact: true }).waitFor();
    await page.getByText("Revoked “ci-bot”").waitFor();
    const res = await eventually(
      () => callApi(apiKey),
      (r) => r.status === 401,
      5_000,
    );
    const err = (await res.json()) as { error: { code: string; message: string } };
    expect(err.error.code).toBe("key_revoked");
  });

  it("binds and verifies an e-mail address, and changes the password", async () => {
    await nav(page, "Security");
    expect(await page.getByTestId("email-status").textContent()).toBe("not verified");
    await page.getByLabel("Address to verify").fill("billing@acme.test");
    await page.getByRole("button", { name: "Send code" }).click();
    await page.getByText("We sent a code to billing@acme.test").waitFor();
    // without SMTP the mail goes to the outbox directory under the data dir
    const outbox = join(dataDir, "outbox");
    const mail = await eventually(
      async () => {
        const files = existsSync(outbox) ? (await readdir(outbox)).sort() : [];
        return files.length
          ? (JSON.parse(await readFile(join(outbox, files.at(-1)!), "utf8")) as { to: string; text: string })
          : null;
      },
      (m) => m !== null,
    );
    expect(mail!.to).toBe("billing@acme.test");
    const code = /\b(\d{6})\b/.exec(mail!.text)?.[1];
    expect(code).toBeDefined();
    await page.getByLabel("Code from the e-mail").fill(code === "000000" ? "111111" : "000000");
    await page.getByRole("button", { name: "Verify", exact: true }).click();
    await page.getByRole("alert").filter({ hasText: "wrong" }).waitFor();
    await page.getByLabel("Code from the e-mail").fill(code!);
    await page.getByRole("button", { name: "Verify", exact: true }).click();
    await page.getByText("billing@acme.test is verified").waitFor();
    await page
      .getByTestId("email-status")
      .filter({ hasText: /^verified$/ })
      .waitFor();

    await page.getByLabel("Current password").fill(PASSWORD);
    await page.getByLabel("New password", { exact: true }).fill("short");
    await page.getByLabel("Repeat the new password").fill("different");
    await page.getByRole("button", { name: "Change password" }).click();
    await page.getByText("Use at least 10 characters.").waitFor();
    await page.getByText("The two new passwords do not match.").waitFor();
    await page.getByText("Enter the 6-digit code from your app, or a recovery code.").waitFor();
    // with two-step verification on, a password change needs a second factor too
    await page.getByLabel("Verification code").fill(recoveryCodes[1]!);
    await page.getByLabel("Current password").fill("not-the-password");
    await page.getByLabel("New password", { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel("Repeat the new password").fill(NEW_PASSWORD);
    await page.getByRole("button", { name: "Change password" }).click();
    await page.getByText("The current password is wrong").waitFor();
    await page.getByLabel("Current password").fill(PASSWORD);
    await page.getByRole("button", { name: "Change password" }).click();
    await page.getByText("Password changed.").waitFor();
    const login = await fetch(`${base}/graphql`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        query: "mutation($e:String!,$p:String!){login(email:$e,password:$p){secondStepRequired}}",
        variables: { e: "billing@acme.test", p: NEW_PASSWORD },
      }),
    });
    expect(
      ((await login.json()) as { data?: { login: { secondStepRequired: boolean } } }).data?.login.secondStepRequired,
    ).toBe(true);
  });

  it("shows model IDs to copy and a quick start with the base URL", async () => {
    await nav(page, "Models");
    const models = page.getByTestId("models-table");
    await models.getByText(DEMO_MODEL, { exact: true }).waitFor();
    await models.getByRole("button", { name: `Copy ID: ${DEMO_MODEL}` }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(DEMO_MODEL);

    await nav(page, "Quick start");
    expect(await page.getByTestId("qs-base-url").textContent()).toBe(`${base}/v1`);
    const panel = page.getByRole("tabpanel");
    expect(await panel.textContent()).toContain(`curl ${base}/v1/chat/completions`);
    await page.getByRole("tab", { name: "Anthropic SDK" }).click();
    expect(await page.getByRole("tabpanel").textContent()).toContain(`baseURL: "${base}"`);
    await page.getByRole("tab", { name: "Anthropic SDK" }).press("ArrowRight");
    expect(await page.getByRole("tab", { name: "Gemini SDK" }).getAttribute("aria-selected")).toBe("true");
    expect(await page.getByRole("tabpanel").textContent()).toContain(`httpOptions: { baseUrl: "${base}" }`);
    await page.getByRole("tab", { name: "OpenAI SDK", exact: true }).click();
    expect(await page.getByRole("tabpanel").textContent()).toContain(`baseURL: "${base}/v1"`);
    expect(await page.getByRole("tabpanel").textContent()).toContain(DEMO_MODEL);
  });

  it("switches between light and dark", async () => {
    const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    const light = await bg();
    await page.getByRole("button", { name: /Theme: system/ }).click(); // system (light here) → light
    await page.getByRole("button", { name: /Theme: light/ }).click(); // → dark
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe("dark");
    expect(await bg()).not.toBe(light);
    await nav(page, "Dashboard");
    await page.getByTestId("usage-chart").waitFor();
    await page.screenshot({ path: join(shots, "dashboard-dark-1280.png") });
    await page.getByRole("button", { name: /Theme: dark/ }).click(); // → system
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBeUndefined();
    expect(await bg()).toBe(light);
  });

  it("renders every page at desktop and phone width without sideways scrolling", async () => {
    const pages: { name: string; path: string; ready: (p: Page) => Promise<unknown> }[] = [
      { name: "dashboard", path: "/", ready: (p) => p.getByTestId("usage-chart").waitFor() },
      { name: "keys", path: "/keys", ready: (p) => p.getByTestId("keys-table").waitFor() },
      { name: "usage", path: "/usage", ready: (p) => p.getByTestId("usage-table").waitFor() },
      { name: "wallet", path: "/wallet", ready: (p) => p.getByTestId("ledger-table").waitFor() },
      { name: "budgets", path: "/budgets", ready: (p) => p.getByTestId("account-budgets").waitFor() },
      { name: "models", path: "/models", ready: (p) => p.getByTestId("models-table").waitFor() },
      { name: "quick-start", path: "/quick-start", ready: (p) => p.getByTestId("qs-base-url").waitFor() },
      { name: "security", path: "/security", ready: (p) => p.getByTestId("twostep-status").waitFor() },
    ];
    const anonymous = await browser.newContext({ colorScheme: "light" });
    const visitor = await anonymous.newPage();
    try {
      for (const size of [DESKTOP, PHONE]) {
        await page.setViewportSize(size);
        await visitor.setViewportSize(size);
        await visitor.goto(`${base}/login`);
        await visitor.getByRole("button", { name: "Sign in" }).waitFor();
        await visitor.screenshot({ path: join(shots, `login-${size.width}.png`) });
        for (const p of pages) {
          await page.goto(`${base}${p.path}`);
          await p.ready(page);
          await page.waitForLoadState("networkidle");
          const overflow = await page.evaluate(
            () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
          );
          expect(overflow, `${p.name} at ${size.width}px scrolls sideways`).toBeLessThanOrEqual(0);
          await page.screenshot({ path: join(shots, `${p.name}-${size.width}.png`), fullPage: true });
        }
      }
      // the phone menu opens and closes with a real button
      await page.goto(`${base}/`);
      const menu = page.getByRole("button", { name: "Menu" });
      expect(await menu.getAttribute("aria-expanded")).toBe("false");
      await menu.click();
      expect(await menu.getAttribute("aria-expanded")).toBe("true");
      await page.getByRole("link", { name: "Usage log" }).click();
      await page.getByRole("heading", { name: "Usage log", level: 1 }).waitFor();
      expect(await menu.getAttribute("aria-expanded")).toBe("false");
    } finally {
      await anonymous.close();
      await page.setViewportSize(DESKTOP);
    }
  });

  it("is served with a Content-Security-Policy, no framing and no sniffing, and broke nothing under it", async () => {
    const res = await fetch(`${base}/keys`);
    expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(cspViolations.slice(0, 3)).toEqual([]);
  });
});
