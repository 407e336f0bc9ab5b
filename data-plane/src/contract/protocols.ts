// The one list of upstream wire protocols and providers. Everything else derives from it: the snapshot
// contract, the config file's schema, the GraphQL enums (hyphens become underscores) and the console's
// choices. The Prisma enum cannot import it; a unit test (protocols.test.ts) holds it to this list.

/** Wire protocols an operator may name for an upstream (`protocol:` in the config, the GraphQL enum). */
export const OPERATOR_PROTOCOLS = ["openai", "anthropic", "gemini", "openai-responses", "demo"] as const;
export type OperatorProtocol = (typeof OPERATOR_PROTOCOLS)[number];

/**
 * Wire protocols a route can speak: the operator's, and those only a provider implies for a model family
 * (Bedrock's Converse for every model that is not Anthropic's).
 */
export const WIRE_PROTOCOLS = [...OPERATOR_PROTOCOLS, "bedrock-converse"] as const;
export type UpstreamProtocol = (typeof WIRE_PROTOCOLS)[number];

/** The GraphQL and Prisma spelling of a name (enum values cannot hold a hyphen). */
export const enumName = (name: string): string => name.replaceAll("-", "_");
/** Back from the GraphQL/Prisma spelling. */
export function fromEnumName<T extends string>(list: readonly T[], value: string): T {
  const found = list.find((n) => enumName(n) === value);
  if (found === undefined) throw new Error(`unknown name ${value}`);
  return found;
}
