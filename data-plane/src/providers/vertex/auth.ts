// Vertex AI's OAuth2 access tokens, through Google's own `google-auth-library`: from the route's service
// account (the JSON text of its key file, the JWT-bearer exchange) or, without one, the application default
// credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's file, the metadata server of GCE/GKE/Cloud Run).
// Tokens are cached per credential and refreshed before expiry by TokenCache (one request per credential
// however many calls are in flight).

import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import type * as GoogleAuthModule from "google-auth-library";
import { z } from "zod";
import { TokenCache, type IssuedToken } from "../token-cache.ts";
import { ProviderAuthError } from "../types.ts";

export const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform";
/** Where google-auth-library sends the JWT-bearer exchange, whatever the key file says. */
export const GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token";

const serviceAccountSchema = z.looseObject({
  type: z.literal("service_account").optional(),
  client_email: z.string().min(1),
  private_key: z.string().min(1),
  private_key_id: z.string().optional(),
  project_id: z.string().optional(),
  token_uri: z.url().optional(),
});
export type ServiceAccount = z.infer<typeof serviceAccountSchema>;

/** The key file's text → its fields; throws a ProviderAuthError naming what is wrong (never the key). */
export function parseServiceAccount(text: string): ServiceAccount {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ProviderAuthError("the Vertex service account file is not JSON");
  }
  const parsed = serviceAccountSchema.safeParse(json);
  if (!parsed.success)
    throw new ProviderAuthError(
      `the Vertex service account file lacks ${parsed.error.issues.map((i) => i.path.join(".")).join(", ")}`,
    );
  return parsed.data;
}

type GoogleAuthLib = typeof GoogleAuthModule;
let lib: Promise<GoogleAuthLib> | null = null;
// Loaded on first use: a gateway without a Vertex upstream never pays for the library's start-up.
const googleAuth = (): Promise<GoogleAuthLib> => (lib ??= import("google-auth-library"));

/**
 * A transport for the library that sends its token exchange to the key file's `token_uri` (a Private Service
 * Connect endpoint, a test's token server): google-auth-library posts to Google's URL whatever the file says.
 * Retries are left to the gateway (the next call asks again), so a refusal is reported at once.
 */
function transporterFor(g: GoogleAuthLib, tokenUri: string | undefined) {
  const t = new g.gaxios.Gaxios({ retry: false });
  if (tokenUri !== undefined && tokenUri !== GOOGLE_TOKEN_URL) {
    const target = new URL(tokenUri);
    t.interceptors.request.add({
      resolved: async (config) => {
        if (config.url.href === GOOGLE_TOKEN_URL) config.url = target;
        return config;
      },
    });
  }
  return t;
}

async function serviceAccountToken(sa: ServiceAccount): Promise<IssuedToken> {
  const g = await googleAuth();
  // A new client per token: the cache here decides when to refresh, not the library's own.
  const client = new g.JWT({
    email: sa.client_email,
    key: sa.private_key,
    keyId: sa.private_key_id,
    scopes: [CLOUD_PLATFORM_SCOPE],
    transporter: transporterFor(g, sa.token_uri),
  });
  const { token } = await client.getAccessToken();
  if (!token) throw new Error("no access token in the answer");
  return { token, expiresAt: client.credentials.expiry_date ?? null };
}

async function defaultCredentialsToken(): Promise<IssuedToken> {
  // A service account's key file named by GOOGLE_APPLICATION_CREDENTIALS is used as a configured one is
  // (its token_uri honoured); read at each refresh only, so a rotated file is picked up.
  const file = process.env.GOOGLE_APPLICATION_CREDENTIALS;
  if (file) {
    const text = await readFile(file, "utf8").catch(() => null);
    if (text !== null && (JSON.parse(text) as { type?: unknown }).type === "service_account")
      return serviceAccountToken(parseServiceAccount(text));
  }
  const g = await googleAuth();
  const auth = new g.GoogleAuth({ scopes: [CLOUD_PLATFORM_SCOPE] });
  const client = await auth.getClient();
  const { token } = await client.getAccessToken();
  if (!token) throw new Error("no access token in the answer");
  return { token, expiresAt: client.credentials.expiry_date ?? null };
}

/** Any other Google credentials file (authorized_user from gcloud, external_account for workload identity). */
async function otherCredentialsToken(json: Record<string, unknown>): Promise<IssuedToken> {
  const g = await googleAuth();
  const auth = new g.GoogleAuth({ credentials: json, scopes: [CLOUD_PLATFORM_SCOPE] });
  const client = await auth.getClient();
  const { token } = await client.getAccessToken();
  if (!token) throw new Error("no access token in the answer");
  return { token, expiresAt: client.credentials.expiry_date ?? null };
}

export const vertexTokens = new TokenCache();

/** A route's credential, read once per file text: its cache key, who it is (for the log), how to get a token. */
interface Credential {
  key: string;
  label: string;
  fetch: () => Promise<IssuedToken>;
}

const credentials = new Map<string, Credential | ProviderAuthError>();

function credentialOf(text: string): Credential {
  let c = credentials.get(text);
  if (c === undefined) {
    try {
      // Keyed by a digest of the file: the key itself is not kept as a map key.
      const key = createHash("sha256").update(text).digest("hex");
      const json = JSON.parse(text) as Record<string, unknown>;
      if (json !== null && typeof json === "object" && json.type !== undefined && json.type !== "service_account") {
        c = { key, label: `${String(json.type)} credentials`, fetch: () => otherCredentialsToken(json) };
      } else {
        const sa = parseServiceAccount(text);
        c = { key, label: sa.client_email, fetch: () => serviceAccountToken(sa) };
      }
    } catch (err) {
      c = err instanceof ProviderAuthError ? err : new ProviderAuthError("the Vertex credentials file is not JSON");
    }
    if (credentials.size >= 100) credentials.clear();
    credentials.set(text, c);
  }
  if (c instanceof ProviderAuthError) throw c;
  return c;
}

const adc: Credential = { key: "adc", label: "application default credentials", fetch: defaultCredentialsToken };

/** The bearer for a route: its credentials file's (`serviceAccount` text) or the default credentials'. */
export async function vertexAccessToken(serviceAccount: string | undefined, cache = vertexTokens): Promise<string> {
  const c = serviceAccount === undefined || serviceAccount === "" ? adc : credentialOf(serviceAccount);
  try {
    return await cache.get(c.key, c.fetch);
  } catch (err) {
    throw new ProviderAuthError(`could not obtain a Vertex access token (${c.label}): ${reasonOf(err)}`, err);
  }
}

/** What the token endpoint said, without echoing anything secret (the library's message holds its answer). */
function reasonOf(err: unknown): string {
  const e = err as { message?: unknown; response?: { status?: unknown } } | null;
  const status = typeof e?.response?.status === "number" ? `HTTP ${e.response.status}: ` : "";
  return status + (typeof e?.message === "string" ? e.message.slice(0, 300) : String(err));
}
