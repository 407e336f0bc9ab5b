import {
  OPERATOR_PROTOCOLS,
  type OperatorProtocol,
  PROVIDERS,
  type ProviderName,
  type UpstreamProtocol,
  providers,
} from "@modelgate/data-plane";

// What an upstream of each provider needs, checked the same way for the config file and for GraphQL, and the
// wire protocol each of its routes speaks (data-plane/src/providers: the provider decides it per model).

/** The provider's settings that are not secret; they reach the data planes in the snapshot as written. */
export const PROVIDER_OPTIONS = ["apiVersion", "region", "project", "auth"] as const;
export type ProviderOptionName = (typeof PROVIDER_OPTIONS)[number];
/** The provider's secrets besides `apiKey`: sealed together, write-only, never logged or shown. */
export const PROVIDER_SECRETS = ["accessKeyId", "secretAccessKey", "sessionToken", "serviceAccount"] as const;
export type ProviderSecretName = (typeof PROVIDER_SECRETS)[number];
/**
 * The longest secret of each kind accepted, in characters: several times the longest the providers issue (an
 * AWS session token runs to about 2 KB, a Google credentials file to about 2.5 KB). A secret travels sealed in
 * every data plane's snapshot, so an unbounded one would be copied to every replica on every reload.
 */
export const SECRET_MAX_LENGTH: Record<"apiKey" | ProviderSecretName, number> = {
  apiKey: 8_192,
  accessKeyId: 128,
  secretAccessKey: 256,
  sessionToken: 8_192,
  serviceAccount: 16_384,
};

export { PROVIDERS, OPERATOR_PROTOCOLS };
export type { ProviderName, OperatorProtocol };

export interface UpstreamShape {
  provider: ProviderName;
  protocol: OperatorProtocol | null;
  baseUrl: string | null;
  options: Partial<Record<ProviderOptionName, string>>;
}

/**
 * The base URL to store for an upstream (the operator's, else the provider's default), or the reason the
 * shape cannot work, phrased for the operator.
 */
export function checkUpstreamShape(u: UpstreamShape): { baseUrl: string } | { problem: string; field: string } {
  const p = providers[u.provider];
  if (u.provider === "direct" && u.protocol === null)
    return { problem: "an upstream without a provider needs its protocol", field: "protocol" };
  for (const name of p.requiredOptions ?? [])
    if (!u.options[name as ProviderOptionName]) return { problem: `provider ${u.provider} needs ${name}`, field: name };
  if (u.protocol !== null) {
    try {
      p.protocolFor("", u.protocol);
    } catch (err) {
      return { problem: (err as Error).message, field: "protocol" };
    }
  }
  const baseUrl = u.baseUrl ?? p.defaultBaseUrl(u.options as Record<string, string>);
  if (baseUrl === null) return { problem: `provider ${u.provider} needs a baseUrl`, field: "baseUrl" };
  return { baseUrl };
}

/** The wire protocol a route speaks toward its upstream's provider; throws the provider's reason when none. */
export function routeProtocol(
  provider: string,
  configured: OperatorProtocol | null,
  upstreamModel: string,
): UpstreamProtocol {
  if (!Object.hasOwn(providers, provider)) throw new Error(`unknown provider ${provider}`);
  return providers[provider as ProviderName].protocolFor(upstreamModel, configured);
}
