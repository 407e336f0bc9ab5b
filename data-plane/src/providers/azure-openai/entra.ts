// Microsoft Entra ID bearers for Azure OpenAI (`auth: entra`), from @azure/identity's DefaultAzureCredential:
// the environment (AZURE_CLIENT_ID with a secret or certificate), workload identity (AKS), managed identity
// (VMs, App Service, Container Apps), then the Azure CLI's login. Cached per process and refreshed before
// expiry by TokenCache, one token request at a time.

import type * as AzureIdentity from "@azure/identity";
import { TokenCache } from "../token-cache.ts";
import { ProviderAuthError } from "../types.ts";

export const COGNITIVE_SERVICES_SCOPE = "https://cognitiveservices.azure.com/.default";

type Identity = typeof AzureIdentity;
/** What @azure/identity's credentials are (TokenCredential): a token for a scope. */
export type EntraCredential = Pick<InstanceType<Identity["DefaultAzureCredential"]>, "getToken">;
let credential: Promise<EntraCredential> | null = null;

// Loaded on first use: a gateway without an Entra-authenticated upstream never loads the library.
const defaultCredential = (): Promise<EntraCredential> =>
  (credential ??= import("@azure/identity").then((m) => new m.DefaultAzureCredential()));

export const entraTokens = new TokenCache();

export async function entraToken(
  cache = entraTokens,
  source: () => Promise<EntraCredential> = defaultCredential,
): Promise<string> {
  try {
    return await cache.get("default", async () => {
      const t = await (await source()).getToken(COGNITIVE_SERVICES_SCOPE);
      if (t === null) throw new Error("no token");
      return { token: t.token, expiresAt: t.expiresOnTimestamp };
    });
  } catch (err) {
    const reason = err instanceof Error ? err.message.slice(0, 300) : String(err);
    throw new ProviderAuthError(`could not obtain a Microsoft Entra ID token (DefaultAzureCredential): ${reason}`, err);
  }
}
