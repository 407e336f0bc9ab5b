import { type Client, customer, type Harness, operatorClient, startHarness } from "../services/graphql/harness.ts";

/** A customer's owner, signed in, and the one gateway API key (sk-mg-…) opened for the account. */
export type Tenant = Awaited<ReturnType<typeof customer>> & { apiKey: { id: string; key: string } };

async function tenant(h: Harness, ops: Client, name: string, keyName: string): Promise<Tenant> {
  const c = await customer(h, ops, name);
  const r = await c.client.gql<{ createApiKey: { key: string; apiKey: { id: string } } }>(
    `mutation($n: String!) { createApiKey(input: { name: $n }) { key apiKey { id } } }`,
    { n: keyName },
  );
  return { ...c, apiKey: { id: r.createApiKey.apiKey.id, key: r.createApiKey.key } };
}

/**
 * A control plane over a fresh database with its operator signed in and two customers, A ("Alpha", key "a-prod")
 * and B ("Beta", key "b-prod"): the start of the GraphQL tests that hold one tenant's data against another's.
 */
export async function startTwoTenants(label: string): Promise<{ h: Harness; ops: Client; a: Tenant; b: Tenant }> {
  const h = await startHarness(label);
  try {
    const ops = await operatorClient(h);
    const a = await tenant(h, ops, "Alpha", "a-prod");
    const b = await tenant(h, ops, "Beta", "b-prod");
    return { h, ops, a, b };
  } catch (err) {
    // The caller's afterAll never gets the harness, so its database would outlive the run.
    await h.close();
    throw err;
  }
}
