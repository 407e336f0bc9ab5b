// SigV4 for Bedrock's runtime API, with AWS's own signer. The credentials are the route's static keys (and
// session token) when the operator gave them, else the default AWS chain (environment, shared files, web
// identity, container and instance metadata), which refreshes them itself before they expire.

import { createHash } from "node:crypto";
import { fromNodeProviderChain } from "@aws-sdk/credential-providers";
import { Hash } from "@smithy/hash-node";
import { SignatureV4 } from "@smithy/signature-v4";
import type { AwsCredentialIdentity, AwsCredentialIdentityProvider } from "@smithy/types";
import type { RouteSnapshot } from "../../contract/index.ts";
import type { ProviderContext } from "../types.ts";
import { ProviderAuthError } from "../types.ts";

/** Bedrock's runtime API signs as service `bedrock`. */
const SERVICE = "bedrock";

const sha256 = Hash.bind(null, "sha256");

/**
 * One signer per upstream's credentials and region: a new snapshot brings new route objects but the same
 * upstream, and the default chain's provider keeps (and refreshes) what it fetched only if it is kept.
 */
const signers = new Map<string, SignatureV4>();

function credentialsOf(
  route: RouteSnapshot,
  ctx: ProviderContext,
): AwsCredentialIdentity | AwsCredentialIdentityProvider {
  const s = ctx.secrets(route);
  if (s.accessKeyId && s.secretAccessKey) {
    return s.sessionToken
      ? { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey, sessionToken: s.sessionToken }
      : { accessKeyId: s.accessKeyId, secretAccessKey: s.secretAccessKey };
  }
  if (s.accessKeyId || s.secretAccessKey)
    throw new ProviderAuthError("accessKeyId and secretAccessKey go together: only one is configured");
  return fromNodeProviderChain();
}

export function signerOf(route: RouteSnapshot, region: string, ctx: ProviderContext): SignatureV4 {
  // The sealed secrets stand for the credentials (a new key is a new ciphertext) without holding them in the key.
  const key = `${route.upstream}\0${region}\0${route.secretsEnc ?? ""}`;
  let signer = signers.get(key);
  if (signer === undefined) {
    signer = new SignatureV4({ service: SERVICE, region, credentials: credentialsOf(route, ctx), sha256 });
    if (signers.size >= 1000) signers.clear();
    signers.set(key, signer);
  }
  return signer;
}

// The URLs of a route's calls are few (its model × four paths): each is parsed once.
const parsedUrls = new Map<string, URL>();
function parse(url: string): URL {
  let u = parsedUrls.get(url);
  if (u === undefined) {
    u = new URL(url);
    if (parsedUrls.size >= 10_000) parsedUrls.clear();
    parsedUrls.set(url, u);
  }
  return u;
}

/**
 * The headers of a signed POST of `body` to `url`. The path is signed as it is sent (a model id's `:` already
 * encoded once, `%3A`): the signer encodes it once more for the canonical request, as AWS's SDKs do and AWS
 * checks. `host` is signed but not returned: the HTTP client sends the same value itself.
 *
 * The body's hash is sent as x-amz-content-sha256, as AWS's JavaScript SDK sends it, and computed here with
 * Node's crypto over the string as it is: the signer, given the body, copies it into bytes and hashes it with a
 * slower path (a 200 KB body: 2.7 ms a call against 0.5 ms this way; the hash is the one cost of signing that
 * grows with the request).
 */
export async function signedHeaders(
  signer: SignatureV4,
  url: string,
  headers: Record<string, string>,
  body: string | Buffer,
): Promise<Record<string, string>> {
  const u = parse(url);
  const query: Record<string, string> = {};
  for (const [k, v] of u.searchParams) query[k] = v;
  let signed;
  try {
    signed = await signer.sign({
      method: "POST",
      protocol: u.protocol,
      hostname: u.hostname,
      ...(u.port === "" ? {} : { port: Number(u.port) }),
      path: u.pathname,
      query,
      headers: { ...headers, host: u.host, "x-amz-content-sha256": createHash("sha256").update(body).digest("hex") },
    });
  } catch (err) {
    // The default chain found no credentials, or its source (metadata service, STS) failed.
    throw new ProviderAuthError(`could not obtain AWS credentials: ${(err as Error).message}`, err);
  }
  const out = signed.headers;
  delete out.host;
  return out;
}
