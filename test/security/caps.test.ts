import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportDir, exportsIdle, pruneExports } from "../../control-plane/src/exports/runner.ts";
import { Client, customer, type Harness, operatorClient, startHarness } from "../services/graphql/harness.ts";

// Issue 12, items 12, 13 and 15 (invitations): exports expire and are capped per account, keys are capped per
// account, invitations can be revoked (and only by whom may).

let h: Harness;
let ops: Client;
const saved = { ...process.env };

beforeAll(async () => {
  process.env.MODELGATE_MAX_KEYS_PER_ACCOUNT = "3";
  process.env.MODELGATE_EXPORTS_PER_ACCOUNT = "2";
  h = await startHarness("caps");
  ops = await operatorClient(h);
}, 120_000);

afterAll(async () => {
  process.env = saved;
  await h?.close();
});

describe("keys per account (item 13)", () => {
  it("refuses the key past the cap, also when created in parallel, and counts revoked keys out", async () => {
    const { client } = await customer(h, ops, "Keycap");
    const create = (name: string) =>
      client.request(`mutation($n: String) { createApiKey(input: { name: $n }) { apiKey { id } } }`, { n: name });
    const results = await Promise.all(["a", "b", "c", "d", "e"].map(create));
    const codes = results.map((r) => r.errors?.[0]?.extensions?.code ?? "OK");
    expect(codes.filter((c) => c === "OK")).toHaveLength(3);
    expect(codes.filter((c) => c === "LIMIT_EXCEEDED")).toHaveLength(2);
    const first = results.find((r) => !r.errors)!.data!.createApiKey as { apiKey: { id: string } };
    await client.gql(`mutation($id: ID!) { revokeApiKey(id: $id) { id } }`, { id: first.apiKey.id });
    expect((await create("f")).errors).toBeUndefined();
  });
});

describe("exports (item 12)", () => {
  it("keeps at most the cap per account and deletes expired ones with their files", async () => {
    const { client } = await customer(h, ops, "Exporter");
    const start = () => client.request(`mutation { startExport(format: CSV) { id } }`);
    const a = await start();
    await exportsIdle();
    const b = await start();
    await exportsIdle();
    expect(a.errors).toBeUndefined();
    expect(b.errors).toBeUndefined();
    expect((await start()).errors?.[0]?.extensions?.code).toBe("LIMIT_EXCEEDED");
    const id = (a.data!.startExport as { id: string }).id;
    const file = join(exportDir(h.app.dataDir), `${id}.csv`);
    expect(existsSync(file)).toBe(true);
    // a day and a bit later, the finished exports go, files included, and the account may export again
    expect(await pruneExports(h.app, Date.now() + 25 * 3600_000)).toBe(2);
    expect(existsSync(file)).toBe(false);
    expect(await h.app.prisma.export.count({ where: { id } })).toBe(0);
    expect((await start()).errors).toBeUndefined();
  });
});

describe("invitations (item 15)", () => {
  it("can be revoked by an owner; the token stops working; another account's owner cannot touch it", async () => {
    const acme = await customer(h, ops, "Inviter");
    const other = await customer(h, ops, "Stranger");
    const made = await acme.client.gql(
      `mutation { createInvitation(email: "new.person@inviter.test") { token invitation { id } } }`,
    );
    const { token, invitation } = made.createInvitation as { token: string; invitation: { id: string } };
    expect(
      await other.client.code(`mutation($id: ID!) { revokeInvitation(id: $id) { id } }`, { id: invitation.id }),
    ).toBe("NOT_FOUND");
    expect(
      await new Client(h.url).code(`mutation($id: ID!) { revokeInvitation(id: $id) { id } }`, { id: invitation.id }),
    ).toBe("UNAUTHENTICATED");
    const revoked = await acme.client.gql(`mutation($id: ID!) { revokeInvitation(id: $id) { revokedAt } }`, {
      id: invitation.id,
    });
    expect((revoked.revokeInvitation as { revokedAt: string }).revokedAt).toBeTruthy();
    const accept = await new Client(h.url).request(
      `mutation($t: String!) { acceptInvitation(token: $t, password: "Some-Password-12") { id } }`,
      { t: token },
    );
    expect(accept.errors?.[0]?.extensions?.code).toBe("BAD_USER_INPUT");
    expect(
      await acme.client.code(`mutation($id: ID!) { revokeInvitation(id: $id) { id } }`, { id: invitation.id }),
    ).toBe("BAD_USER_INPUT");
  });
});

describe("one IP allowlist rule for the API and the admin CLI (item 15)", () => {
  it("the CLI refuses what GraphQL refuses", async () => {
    const { parseCommandArgs } = await import("../../control-plane/src/admin/commands.ts");
    const { client } = await customer(h, ops, "Allowlist");
    for (const bad of ["300.1.1.1/8", "10.0.0.0/33", "::/129", "1.2.3.4/-1", "fe80::1::2"]) {
      expect(() => parseCommandArgs("key create", { account: "x", "ip-allowlist": bad }), bad).toThrow(
        /not an IP address or CIDR|bad prefix/,
      );
      expect(
        await client.code(`mutation($ip: [String!]) { createApiKey(input: { ipAllowlist: $ip }) { key } }`, {
          ip: [bad],
        }),
        bad,
      ).toBe("BAD_USER_INPUT");
    }
    expect(
      parseCommandArgs("key create", { account: "x", "ip-allowlist": "10.0.0.0/8,2001:db8::/32,192.168.1.7" })[
        "ip-allowlist"
      ],
    ).toHaveLength(3);
  });
});
