import { readFileSync } from "node:fs";
import type { GraphQLScalarType } from "graphql";
import {
  buildSchema,
  type GraphQLArgument,
  type GraphQLField,
  type GraphQLInputType,
  GraphQLEnumType,
  GraphQLInputObjectType,
  GraphQLList,
  GraphQLNonNull,
  type GraphQLOutputType,
  getNamedType,
  isLeafType,
} from "graphql";
import { afterAll, beforeAll, expect, it } from "vitest";
import { repoRoot } from "../helpers/processes.ts";
import { Client, customer, type Harness, operatorClient, startHarness } from "../services/graphql/harness.ts";

// Authorization, operation by operation and principal by principal. Every Query and Mutation field of the
// printed schema (control-plane/schema.graphql, so an operation added later is tried too) is sent by every
// principal that must not get it, with arguments that name account A's things (its account, key, export,
// invitation, users, token). Nothing here knows how the resolvers check; the oracle is the answer alone:
//
// - anonymous: refused, except the few operations meant for signed-out visitors;
// - account B's owner, member and write token: refused wherever an argument names one of A's things;
// - account A's member and A's read-only token: refused on the operations for operators, and the token on
//   every mutation (it may only read);
// - account A's owner: refused on the operations for operators.
//
// "Refused" means no data for the field and an error; a success is printed with its principal so a leak
// names itself. The closing count is the number of (operation, principal) pairs tried.

const schema = buildSchema(readFileSync(`${repoRoot}/control-plane/schema.graphql`, "utf8"));

/** What a signed-out visitor may call (their answers hold nothing of anyone's). */
const PUBLIC = new Set(["login", "acceptInvitation", "me", "logout", "verifySecondStep"]);
/** Operators only (an explicit list: a new operation that belongs here must be added). */
const OPERATOR_ONLY = new Set([
  "catalogModels",
  "accounts",
  "users",
  "upstreams",
  "adjustBalance",
  "createCustomer",
  "createUser",
  "deleteModel",
  "deletePriceContract",
  "deleteRoute",
  "deleteUpstream",
  "setAccountBudgetCaps",
  "setAccountLimits",
  "setAccountStatus",
  "setPriceContract",
  "setTrialPolicy",
  "topUp",
  "upsertModel",
  "upsertRoute",
  "upsertUpstream",
  "operatorUsage",
  "upstreamHealth",
]);
/** Operations that end the caller's own session: never sent with a session, which the later pairs need. */
const ENDS_SESSION = new Set(["logout"]);

interface Things {
  account: string;
  key: string;
  export: string;
  invitation: string;
  owner: string;
  member: string;
  token: string;
}

let h: Harness;
let a: Things;
const principals: { name: string; client: Client; session: boolean }[] = [];
let anonymous: Client;
let ownerA: Client;
let memberA: Client;
let readTokenA: Client;

beforeAll(async () => {
  h = await startHarness("authz");
  const ops = await operatorClient(h);
  const A = await customer(h, ops, "Alpha");
  const B = await customer(h, ops, "Bravo");
  ownerA = A.client;
  const member = async (accountId: string, email: string) => {
    const u = await ops.gql<{ createUser: { id: string } }>(
      `mutation($a: ID, $e: String!) { createUser(accountId: $a, email: $e, password: "member-password-123", role: member) { id } }`,
      { a: accountId, e: email },
    );
    const c = new Client(h.url);
    await c.login(email, "member-password-123");
    return { id: u.createUser.id, client: c };
  };
  const mA = await member(A.accountId, "member-a@example.com");
  const mB = await member(B.accountId, "member-b@example.com");
  memberA = mA.client;
  const key = await ownerA.gql<{ createApiKey: { apiKey: { id: string } } }>(
    `mutation { createApiKey(input: { name: "a-key" }) { apiKey { id } } }`,
  );
  const exp = await ownerA.gql<{ startExport: { id: string } }>(`mutation { startExport(format: CSV) { id } }`);
  const inv = await ownerA.gql<{ createInvitation: { invitation: { id: string } } }>(
    `mutation { createInvitation(email: "new@example.com") { invitation { id } } }`,
  );
  const pat = async (c: Client, scopes: string) =>
    (
      await c.gql<{ createPersonalAccessToken: { token: string; accessToken: { id: string } } }>(
        `mutation { createPersonalAccessToken(name: "t", scopes: [${scopes}]) { token accessToken { id } } }`,
      )
    ).createPersonalAccessToken;
  const readA = await pat(ownerA, "read");
  const writeB = await pat(B.client, "read, write");
  a = {
    account: A.accountId,
    key: key.createApiKey.apiKey.id,
    export: exp.startExport.id,
    invitation: inv.createInvitation.invitation.id,
    owner: A.ownerId,
    member: mA.id,
    token: readA.accessToken.id,
  };
  anonymous = new Client(h.url);
  readTokenA = new Client(h.url, readA.token);
  principals.push(
    { name: "B owner", client: B.client, session: true },
    { name: "B member", client: mB.client, session: true },
    { name: "B write token", client: new Client(h.url, writeB.token), session: false },
  );
}, 180_000);

afterAll(async () => {
  await h?.close();
});

/** An ID argument as one of A's things, chosen by the operation's and the argument's names. */
function idFor(field: string, arg: string): string {
  const f = field.toLowerCase();
  const n = arg.toLowerCase();
  if (n.includes("account")) return a.account;
  if (n.includes("user")) return f.includes("member") ? a.member : a.owner;
  if (n.includes("key") || f.includes("apikey")) return a.key;
  if (f.includes("export")) return a.export;
  if (f.includes("invitation")) return a.invitation;
  if (f.includes("token")) return a.token;
  return a.account;
}

/** A GraphQL literal for a value of `type`; `named` is set when it names one of A's things. */
function literal(
  field: string,
  argName: string,
  type: GraphQLInputType,
  named: { any: boolean },
  required: boolean,
): string | null {
  if (type instanceof GraphQLNonNull) return literal(field, argName, type.ofType, named, true);
  if (type instanceof GraphQLList) {
    const inner = literal(field, argName, type.ofType, named, true);
    return inner === null ? (required ? "[]" : null) : `[${inner}]`;
  }
  if (type instanceof GraphQLEnumType) return required ? type.getValues()[0]!.name : null;
  if (type instanceof GraphQLInputObjectType) {
    if (!required) return null;
    const parts = Object.values(type.getFields()).flatMap((f) => {
      const v = literal(field, f.name, f.type, named, f.type instanceof GraphQLNonNull || /accountid/i.test(f.name));
      return v === null ? [] : [`${f.name}: ${v}`];
    });
    return `{${parts.join(", ")}}`;
  }
  const scalar = type as GraphQLScalarType;
  if (scalar.name === "ID" && (required || /accountid|userid|apikeyid/i.test(argName))) {
    named.any = true;
    return JSON.stringify(idFor(field, argName));
  }
  if (!required) return null;
  switch (scalar.name) {
    case "Int":
    case "Long":
      return "1";
    case "Float":
      return "1.5";
    case "Boolean":
      return "false";
    case "DateTime":
      return JSON.stringify(new Date(Date.now() + 86_400_000).toISOString());
    case "ID":
      return JSON.stringify(a.account);
    default:
      return JSON.stringify(argName.toLowerCase().includes("email") ? "someone@example.com" : "1");
  }
}

function selection(type: GraphQLOutputType): string {
  return isLeafType(getNamedType(type)) ? "" : " { __typename }";
}

interface Operation {
  name: string;
  kind: "query" | "mutation";
  document: string;
  /** an argument names one of A's things */
  namesA: boolean;
}

/** Every operation, its arguments naming A's things (built once those exist). */
const buildOperations = (): Operation[] =>
  (["query", "mutation"] as const).flatMap((kind) => {
    const root = kind === "query" ? schema.getQueryType()! : schema.getMutationType()!;
    return Object.values(root.getFields()).map((f: GraphQLField<unknown, unknown>) => {
      const named = { any: false };
      const args = f.args.flatMap((arg: GraphQLArgument) => {
        const v = literal(f.name, arg.name, arg.type, named, arg.type instanceof GraphQLNonNull);
        return v === null ? [] : [`${arg.name}: ${v}`];
      });
      const call = `${f.name}${args.length ? `(${args.join(", ")})` : ""}${selection(f.type)}`;
      return { name: f.name, kind, document: `${kind} { ${call} }`, namesA: named.any };
    });
  });

/** True when the field came back with data and no error: the principal got what it asked for. */
async function granted(c: Client, op: Operation): Promise<boolean> {
  const r = await c.request(op.document);
  expect(r.status, `${op.name}: ${JSON.stringify(r.errors)}`).toBeLessThan(500);
  const value = (r.data as Record<string, unknown> | null | undefined)?.[op.name];
  return !r.errors?.length && value !== null && value !== undefined;
}

it("no principal gets an operation it must not have, for every operation of the schema", async () => {
  const operations = buildOperations();
  expect(operations.length).toBeGreaterThan(50);
  const leaks: string[] = [];
  let pairs = 0;
  const tryAs = async (who: string, c: Client, op: Operation) => {
    pairs++;
    if (await granted(c, op)) leaks.push(`${who} → ${op.name}: ${op.document}`);
  };
  for (const op of operations) {
    if (!PUBLIC.has(op.name)) await tryAs("anonymous", anonymous, op);
    if (op.namesA)
      for (const p of principals) if (!(p.session && ENDS_SESSION.has(op.name))) await tryAs(p.name, p.client, op);
    if (OPERATOR_ONLY.has(op.name)) {
      await tryAs("A owner", ownerA, op);
      await tryAs("A member", memberA, op);
    }
    if (OPERATOR_ONLY.has(op.name) || (op.kind === "mutation" && !PUBLIC.has(op.name)))
      await tryAs("A read token", readTokenA, op);
  }
  console.log(
    `authz matrix: ${operations.length} operations, ${pairs} (operation, principal) pairs tried, ${leaks.length} granted`,
  );
  expect(leaks).toEqual([]);
  // A's things are all still there and still A's: nothing above changed them.
  const still = await ownerA.gql<{ apiKey: { status: string }; export: { id: string } }>(
    `query($k: ID!, $e: ID!) { apiKey(id: $k) { status } export(id: $e) { id } }`,
    { k: a.key, e: a.export },
  );
  expect(still).toEqual({ apiKey: { status: "active" }, export: { id: a.export } });
});
