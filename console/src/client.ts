import { cacheExchange, Client, fetchExchange, mapExchange, type Operation } from "@urql/vue";
import { SIGN_IN_OPERATIONS } from "./graphql/session";
import { isUnauthenticated } from "./composables/errors";

function operationName(op: Operation): string | undefined {
  for (const d of op.query.definitions) {
    if (d.kind === "OperationDefinition") return d.name?.value;
  }
  return undefined;
}

/**
 * The GraphQL client: same-origin `/graphql` with the session cookie, as application/json POSTs (the server's
 * CSRF rule). When any query answers UNAUTHENTICATED outside signing in, the session has ended: `onExpired`.
 */
export function createClient(onExpired: () => void): Client {
  return new Client({
    url: "/graphql",
    preferGetMethod: false,
    fetchOptions: () => ({
      credentials: "same-origin",
      headers: { accept: "application/graphql-response+json, application/json" },
    }),
    exchanges: [
      mapExchange({
        onError(error, operation) {
          if (isUnauthenticated(error) && !SIGN_IN_OPERATIONS.has(operationName(operation) ?? "")) onExpired();
        },
      }),
      cacheExchange,
      fetchExchange,
    ],
  });
}
