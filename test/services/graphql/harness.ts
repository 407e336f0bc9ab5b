import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureOperator } from "../../../control-plane/src/services/users.ts";
import { exportsIdle } from "../../../control-plane/src/exports/runner.ts";
import { createGraphqlHandler } from "../../../control-plane/src/graphql/handler.ts";
import type { Database } from "../../../control-plane/src/db/client.ts";
import type { AppContext } from "../../../control-plane/src/graphql/context.ts";
import { createApiRoutes } from "../../../control-plane/src/http/api-routes.ts";
import { createMailer, type OutboxMessage } from "../../../control-plane/src/mail/mailer.ts";
import { freshDatabase } from "../../helpers/postgres.ts";

export const OPERATOR = { email: "ops@example.com", password: "operator-password-1" };

export interface Harness {
  url: string;
  app: AppContext;
  /** the database (for settlement in tests) */
  db: Database;
  snapshotChanges: () => number;
  outbox(to?: string): Promise<OutboxMessage[]>;
  close(): Promise<void>;
}

/** A control plane API on a random port over a fresh Postgres database, with a file outbox. */
export async function startHarness(label: string): Promise<Harness> {
  const db = await freshDatabase(label);
  const dir = await mkdtemp(join(tmpdir(), "mg-gql-"));
  let changes = 0;
  const app: AppContext = {
    prisma: db.db.prisma,
    copyOut: db.db.copyOut,
    snapshotChanged: () => void changes++,
    masterKey: randomBytes(32),
    mail: createMailer({ outboxDir: join(dir, "outbox") }),
    dataDir: dir,
    secureCookies: false,
    dev: false,
  };
  await ensureOperator(app, OPERATOR);
  const graphql = createGraphqlHandler(app);
  const api = createApiRoutes(app);
  const server: Server = createServer((req, res) => {
    void (async () => {
      if (await api(req, res)) return;
      if ((req.url ?? "").startsWith("/graphql")) return graphql(req, res);
      res.writeHead(404).end();
    })().catch((err: unknown) => {
      console.error(err);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  // As the product's servers do: longer than clients' keep-alive, so an idle socket is never closed under a request.
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    app,
    db: db.db,
    snapshotChanges: () => changes,
    async outbox(to) {
      const files = (await readdir(join(dir, "outbox")).catch(() => [] as string[])).sort();
      const all = await Promise.all(
        files.map(async (f) => JSON.parse(await readFile(join(dir, "outbox", f), "utf8")) as OutboxMessage),
      );
      return to ? all.filter((m) => m.to === to) : all;
    },
    async close() {
      await exportsIdle();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await db.drop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface GqlError {
  message: string;
  extensions?: { code?: string; [k: string]: unknown };
  path?: (string | number)[];
}
export interface GqlResponse<T = Record<string, unknown>> {
  status: number;
  data?: T | null;
  errors?: GqlError[];
  headers: Headers;
}

/** A browser-like client: keeps the session cookie, or sends a bearer token. */
export class Client {
  cookie: string | null = null;
  constructor(
    readonly base: string,
    readonly token: string | null = null,
  ) {}

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read loosely typed GraphQL results
  async request<T = Record<string, any>>(
    query: string,
    variables: Record<string, unknown> = {},
    init: { headers?: Record<string, string>; method?: string } = {},
  ): Promise<GqlResponse<T>> {
    const headers: Record<string, string> = { "content-type": "application/json", ...init.headers };
    if (this.cookie) headers.cookie = this.cookie;
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    const res = await fetch(`${this.base}/graphql`, {
      method: init.method ?? "POST",
      headers,
      body: JSON.stringify({ query, variables }),
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const [name, value] = (pair ?? "").split("=");
      if (name !== "mg_session") continue;
      this.cookie = value && !/Max-Age=0/.test(c) ? `mg_session=${value}` : null;
    }
    const body = (await res.json()) as { data?: T; errors?: GqlError[] };
    return { status: res.status, data: body.data, errors: body.errors, headers: res.headers };
  }

  /** Data, or throws with the errors. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read loosely typed GraphQL results
  async gql<T = Record<string, any>>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
    const r = await this.request<T>(query, variables);
    if (r.errors?.length) throw new Error(`GraphQL errors: ${JSON.stringify(r.errors)}`);
    return r.data as T;
  }

  /** The first error's code (the call is expected to fail). */
  async code(query: string, variables: Record<string, unknown> = {}): Promise<string | undefined> {
    const r = await this.request(query, variables);
    if (!r.errors?.length) throw new Error(`expected an error, got ${JSON.stringify(r.data)}`);
    return r.errors[0]!.extensions?.code;
  }

  async login(email: string, password: string) {
    return this.gql<{ login: { secondStepRequired: boolean; user: { id: string } | null } }>(
      `mutation($e: String!, $p: String!) { login(email: $e, password: $p) { secondStepRequired user { id } } }`,
      { e: email, p: password },
    );
  }
}

/**
 * The export once its job is done: the runner works in this process, so its being idle is the event (it was
 * scheduled before the mutation that started it answered).
 */
export async function exportFinished(c: Client, id: string) {
  await exportsIdle();
  return (await c.gql(`query($id: ID!) { export(id: $id) { status rowCount downloadUrl error } }`, { id })).export;
}

export async function operatorClient(h: Harness) {
  const c = new Client(h.url);
  await c.login(OPERATOR.email, OPERATOR.password);
  return c;
}

/** Opens a customer with an owner who has a password; returns the owner's signed-in client. */
export async function customer(h: Harness, ops: Client, name: string, kind: "standard" | "trial" = "standard") {
  const email = `${name.toLowerCase()}@example.com`;
  const password = `${name}-password-123`;
  const r = await ops.gql<{ createCustomer: { account: { id: string }; owner: { id: string } } }>(
    `mutation($i: CreateCustomerInput!) { createCustomer(input: $i) { account { id } owner { id } } }`,
    { i: { name, kind, initialBalance: "100", owner: { email, password } } },
  );
  const client = new Client(h.url);
  await client.login(email, password);
  return { client, accountId: r.createCustomer.account.id, ownerId: r.createCustomer.owner.id, email, password };
}
