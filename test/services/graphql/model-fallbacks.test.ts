import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCatalog } from "../../../control-plane/src/snapshot/catalog.ts";
import { type Client, type Harness, operatorClient, startHarness } from "./harness.ts";

// A model's fallbacks through GraphQL (issue 28, point 5): set and read in order, carried by the catalog the
// data planes route by, and refused when they name the model itself, a model twice or an unknown one.

let h: Harness;
let ops: Client;

beforeAll(async () => {
  h = await startHarness("gql_fallbacks");
  ops = await operatorClient(h);
});
afterAll(async () => {
  await h?.close();
});

const UPSERT = `mutation($input: ModelInput!) { upsertModel(input: $input) { id fallbacks } }`;
const model = (id: string, fallbacks?: string[]) => ({
  input: { id, inputPrice: "1", outputPrice: "2", ...(fallbacks ? { fallbacks } : {}) },
});

describe("a model's fallbacks", () => {
  it("are set in order, read back, and travel in the catalog", async () => {
    for (const id of ["fbq-a-2025-01-01", "fbq-b-2025-01-01"]) await ops.gql(UPSERT, model(id));
    const r = await ops.gql(UPSERT, model("fbq-main-2025-01-01", ["fbq-b-2025-01-01", "fbq-a-2025-01-01"]));
    expect(r.upsertModel).toEqual({ id: "fbq-main-2025-01-01", fallbacks: ["fbq-b-2025-01-01", "fbq-a-2025-01-01"] });
    const listed = await ops.gql(`{ catalogModels { id fallbacks } }`);
    expect(listed.catalogModels).toContainEqual({ id: "fbq-a-2025-01-01", fallbacks: [] });
    const catalog = await buildCatalog(h.app.prisma);
    expect(catalog["fbq-main-2025-01-01"]!.fallbacks).toEqual(["fbq-b-2025-01-01", "fbq-a-2025-01-01"]);
    // A model without fallbacks carries no field: its snapshot entry is as before.
    expect(catalog["fbq-a-2025-01-01"]).not.toHaveProperty("fallbacks");
    // Saved again without the field: none.
    expect((await ops.gql(UPSERT, model("fbq-main-2025-01-01"))).upsertModel.fallbacks).toEqual([]);
  });

  it("refuses the model itself, a model twice and an unknown model, naming the field", async () => {
    const refused = async (fallbacks: string[]) => {
      const res = await ops.request(UPSERT, model("fbq-main-2025-01-01", fallbacks));
      return { code: res.errors?.[0]?.extensions?.code, message: res.errors?.[0]?.message };
    };
    expect(await refused(["fbq-main-2025-01-01"])).toMatchObject({ code: "BAD_USER_INPUT" });
    expect(await refused(["fbq-a-2025-01-01", "fbq-a-2025-01-01"])).toMatchObject({ code: "BAD_USER_INPUT" });
    expect(await refused(["fbq-nope-2025-01-01"])).toMatchObject({
      code: "BAD_USER_INPUT",
      message: expect.stringContaining("fbq-nope-2025-01-01"),
    });
  });
});
