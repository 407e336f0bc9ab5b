import { open } from "@modelgate/data-plane";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCatalog } from "../../../control-plane/src/snapshot/catalog.ts";
import { type Client, type Harness, operatorClient, startHarness } from "./harness.ts";

// Providers through GraphQL (issue 27): an operator declares a Bedrock or Vertex upstream with its settings and
// write-only secrets; the secrets are sealed, never returned, changed one by one; each route of the catalog
// speaks the protocol its provider speaks for its model.

let h: Harness;
let ops: Client;

beforeAll(async () => {
  h = await startHarness("gql_providers");
  ops = await operatorClient(h);
});
afterAll(async () => {
  await h?.close();
});

const UPSERT = `mutation($input: UpstreamInput!) {
  upsertUpstream(input: $input) { id name provider protocol baseUrl region project apiVersion hasApiKey secretsSet }
}`;

describe("upstreams of a provider", () => {
  it("lists the providers with what each needs", async () => {
    const r = await ops.gql(`{ upstreamProviders { name requiredOptions options secrets needsKey } }`);
    const byName = Object.fromEntries(
      (r.upstreamProviders as { name: string; secrets: string[] }[]).map((p) => [p.name, p]),
    );
    expect(byName.bedrock).toMatchObject({ requiredOptions: ["region"], needsKey: false });
    expect(byName.bedrock!.secrets).toEqual(expect.arrayContaining(["accessKeyId", "secretAccessKey", "sessionToken"]));
    expect(byName.deepseek).toMatchObject({ requiredOptions: [], needsKey: true });
    expect(byName.direct).toBeDefined();
  });

  it("a Bedrock upstream: its region, the default endpoint, its secrets sealed and write-only", async () => {
    const secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    const r = await ops.gql(UPSERT, {
      input: {
        name: "bedrock-east",
        provider: "bedrock",
        region: "us-east-1",
        accessKeyId: "AKIDEXAMPLE",
        secretAccessKey: secret,
      },
    });
    expect(r.upsertUpstream).toMatchObject({
      provider: "bedrock",
      protocol: null,
      region: "us-east-1",
      baseUrl: "https://bedrock-runtime.us-east-1.amazonaws.com",
      hasApiKey: false,
      secretsSet: ["accessKeyId", "secretAccessKey"],
    });
    expect(JSON.stringify(r)).not.toContain(secret);
    const row = await h.app.prisma.upstream.findUniqueOrThrow({ where: { name: "bedrock-east" } });
    expect(row.secretsEnc).not.toContain(secret);
    expect(JSON.parse(open(h.app.masterKey, row.secretsEnc!))).toEqual({
      accessKeyId: "AKIDEXAMPLE",
      secretAccessKey: secret,
    });

    // A later write adds the session token and keeps the rest; null removes one.
    const id = (r.upsertUpstream as { id: string }).id;
    const r2 = await ops.gql(UPSERT, {
      input: {
        id,
        name: "bedrock-east",
        provider: "bedrock",
        region: "us-east-1",
        sessionToken: "tok",
        accessKeyId: null,
      },
    });
    expect(r2.upsertUpstream.secretsSet).toEqual(["secretAccessKey", "sessionToken"]);
    const audit = await h.app.prisma.auditLog.findMany({ where: { subjectId: id } });
    expect(JSON.stringify(audit)).not.toContain(secret);
    expect(JSON.stringify(audit)).not.toContain('tok"');
  });

  it("refuses what cannot work, naming the field", async () => {
    const refused = async (input: Record<string, unknown>) => {
      const res = await ops.request(UPSERT, { input });
      return { code: res.errors?.[0]?.extensions?.code, message: res.errors?.[0]?.message };
    };
    expect(await refused({ name: "no-region", provider: "bedrock" })).toMatchObject({
      code: "BAD_USER_INPUT",
      message: expect.stringContaining("region"),
    });
    expect(await refused({ name: "no-proto", baseUrl: "http://127.0.0.1:9" })).toMatchObject({
      code: "BAD_USER_INPUT",
      message: expect.stringContaining("protocol"),
    });
    expect(await refused({ name: "ds-claude", provider: "deepseek", protocol: "anthropic" })).toMatchObject({
      code: "BAD_USER_INPUT",
      message: expect.stringContaining("protocol openai"),
    });
    expect(
      await refused({ name: "bad-sa", provider: "vertex", project: "p", region: "us-central1", serviceAccount: "{}" }),
    ).toMatchObject({ code: "BAD_USER_INPUT", message: expect.stringContaining("service_account") });
    // Secrets are bounded (each is copied, sealed, into every data plane's snapshot): a credentials file of
    // 900 KB, a session token of 9 KB and a pool key of 9 KB are refused, naming what is too long.
    const bigAccount = JSON.stringify({ type: "service_account", pad: "x".repeat(900_000) });
    expect(
      await refused({
        name: "big-sa",
        provider: "vertex",
        project: "p",
        region: "us-central1",
        serviceAccount: bigAccount,
      }),
    ).toMatchObject({
      code: "BAD_USER_INPUT",
      message: expect.stringContaining("serviceAccount is longer than 16384"),
    });
    expect(
      await refused({
        name: "big-token",
        provider: "bedrock",
        region: "us-east-1",
        accessKeyId: "AKIA",
        secretAccessKey: "s",
        sessionToken: "t".repeat(9_000),
      }),
    ).toMatchObject({ code: "BAD_USER_INPUT", message: expect.stringContaining("sessionToken") });
    expect(
      await refused({
        name: "big-key",
        protocol: "openai",
        baseUrl: "http://127.0.0.1:9",
        keys: [{ id: "a", apiKey: "k".repeat(9_000) }],
      }),
    ).toMatchObject({ code: "BAD_USER_INPUT", message: expect.stringContaining("longer than 8192") });
    expect(await h.app.prisma.upstream.count({ where: { name: { startsWith: "big-" } } })).toBe(0);
  });

  it("each route of the catalog speaks what its provider speaks for its model", async () => {
    await ops.gql(
      `mutation { upsertModel(input: { id: "claude-x-2025-01-01", inputPrice: "3", outputPrice: "15" }) { id } }`,
    );
    await ops.gql(
      `mutation { upsertModel(input: { id: "nova-x-2025-01-01", inputPrice: "1", outputPrice: "2" }) { id } }`,
    );
    await ops.gql(
      `mutation { upsertModel(input: { id: "ds-x-2025-01-01", inputPrice: "1", outputPrice: "2" }) { id } }`,
    );
    const bedrock = (await h.app.prisma.upstream.findUniqueOrThrow({ where: { name: "bedrock-east" } })).id;
    const ds = (await ops.gql(UPSERT, { input: { name: "ds", provider: "deepseek", apiKey: "sk-ds" } })).upsertUpstream;
    expect(ds).toMatchObject({ baseUrl: "https://api.deepseek.com/v1", protocol: null, hasApiKey: true });
    const route = (modelId: string, upstreamId: string, upstreamModel: string) =>
      ops.gql(`mutation($i: RouteInput!) { upsertRoute(input: $i) { id } }`, {
        i: { modelId, upstreamId, upstreamModel },
      });
    await route("claude-x-2025-01-01", bedrock, "anthropic.claude-sonnet-4-5-20250929-v1:0");
    await route("nova-x-2025-01-01", bedrock, "amazon.nova-pro-v1:0");
    await route("ds-x-2025-01-01", ds.id, "deepseek-chat");
    const catalog = await buildCatalog(h.app.prisma);
    expect(catalog["claude-x-2025-01-01"]!.routes[0]).toMatchObject({
      provider: "bedrock",
      protocol: "anthropic",
      providerOptions: { region: "us-east-1" },
      secretsEnc: expect.any(String),
    });
    expect(catalog["nova-x-2025-01-01"]!.routes[0]).toMatchObject({
      provider: "bedrock",
      protocol: "bedrock-converse",
    });
    expect(catalog["ds-x-2025-01-01"]!.routes[0]).toMatchObject({ provider: "deepseek", protocol: "openai" });
    expect(catalog["ds-x-2025-01-01"]!.routes[0]).not.toHaveProperty("secretsEnc");
  });
});
