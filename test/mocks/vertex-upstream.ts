// A mock Google Vertex AI that enforces what the real one does about auth and wire format:
// - a token endpoint doing the JWT-bearer exchange (RFC 7523, grant_type
//   urn:ietf:params:oauth:grant-type:jwt-bearer): the assertion's RS256 signature is verified with the
//   service account's public key, and its iss, scope, aud, iat and exp checked, before an access token is
//   issued (with expires_in);
// - the model endpoints under /v1/projects/{project}/locations/{region}/publishers/…, which take only a
//   bearer it issued and that has not expired (Google's 401 UNAUTHENTICATED otherwise);
// - Gemini (publishers/google): generateContent and streamGenerateContent, answered by the Gemini mock (the
//   wire format is the Gemini API's), every content with a role; :predict for embeddings, answered here;
// - Claude (publishers/anthropic): rawPredict and streamRawPredict, the body with anthropic_version
//   "vertex-2023-10-16" and without `model`, answered by the Anthropic mock (same Messages wire format).
// The service account is generated here (node:crypto) with its token_uri at this mock.

import { generateKeyPairSync, randomBytes, verify, type KeyObject } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { startAnthropicUpstream } from "./anthropic-upstream.ts";
import { startGeminiUpstream } from "./gemini-upstream.ts";
import { DEFAULT_MOCK_KEY, type MockUpstream, chunksOf, listen, mockEmbedding, mockTokens } from "./script.ts";

export const VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16";
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform";
const GOOGLE_TOKEN_URL = "https://oauth2.googleapis.com/token";

export interface VertexRequest {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: unknown;
}

export interface TokenRequest {
  /** the assertion's claims, once verified */
  claims: Record<string, unknown>;
  /** the token issued, or null when the exchange was refused */
  issued: string | null;
}

export interface VertexMockOptions {
  project?: string;
  region?: string;
  /** seconds each issued token lives (Google: 3599) */
  expiresIn?: number;
  /** answer the next token exchanges with this status and OAuth error instead */
  tokenFailure?: { status: number; error: string; description: string } | null;
}

export interface VertexMock {
  /** the root, as a Vertex upstream's baseUrl (no path) */
  url: string;
  project: string;
  region: string;
  /** a service-account key file (JSON text) whose token_uri is this mock */
  serviceAccount: string;
  /** a key file for the same account signed with another key: its assertions fail verification */
  wrongKeyServiceAccount: string;
  tokenUri: string;
  /** every model-endpoint request, as received */
  requests: VertexRequest[];
  tokenRequests: TokenRequest[];
  /** the issued tokens still valid */
  tokens: Map<string, number>;
  options: VertexMockOptions;
  /** script the Gemini and Claude answers on these (their reply queues) */
  gemini: MockUpstream;
  anthropic: MockUpstream;
  close(): Promise<void>;
}

function keyFile(email: string, privateKeyPem: string, keyId: string, project: string, tokenUri: string): string {
  return JSON.stringify(
    {
      type: "service_account",
      project_id: project,
      private_key_id: keyId,
      private_key: privateKeyPem,
      client_email: email,
      client_id: "100000000000000000001",
      auth_uri: "https://accounts.google.com/o/oauth2/auth",
      token_uri: tokenUri,
      universe_domain: "googleapis.com",
    },
    null,
    2,
  );
}

const b64url = (s: string): Buffer => Buffer.from(s, "base64url");

/** The assertion's claims when its signature verifies with `publicKey` and its claims are as Google wants them. */
function verifyAssertion(
  assertion: string,
  publicKey: KeyObject,
  keyId: string,
  email: string,
  audiences: string[],
): { claims: Record<string, unknown> } | { error: string } {
  const parts = assertion.split(".");
  if (parts.length !== 3)
    return { error: "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe" };
  const [h, p, sig] = parts as [string, string, string];
  let header: Record<string, unknown>;
  let claims: Record<string, unknown>;
  try {
    header = JSON.parse(b64url(h).toString("utf8")) as Record<string, unknown>;
    claims = JSON.parse(b64url(p).toString("utf8")) as Record<string, unknown>;
  } catch {
    return { error: "Invalid JWT: malformed" };
  }
  if (header.alg !== "RS256") return { error: "Invalid JWT: alg must be RS256" };
  if (header.kid !== undefined && header.kid !== keyId) return { error: "Invalid JWT Signature." };
  if (!verify("RSA-SHA256", Buffer.from(`${h}.${p}`), publicKey, b64url(sig)))
    return { error: "Invalid JWT Signature." };
  if (claims.iss !== email) return { error: "Invalid JWT: iss is not the service account" };
  if (typeof claims.aud !== "string" || !audiences.includes(claims.aud))
    return { error: "Invalid JWT: aud is not the token endpoint" };
  if (typeof claims.scope !== "string" || !claims.scope.split(" ").includes(CLOUD_PLATFORM))
    return { error: "Invalid JWT: scope does not include cloud-platform" };
  const now = Math.floor(Date.now() / 1000);
  const { iat, exp } = claims;
  if (typeof iat !== "number" || typeof exp !== "number" || exp <= now || iat > now + 60 || exp - iat > 3600)
    return { error: "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe." };
  return { claims };
}

const STATUS: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
};

function googleError(res: ServerResponse, code: number, message: string): void {
  res.writeHead(code, { "content-type": "application/json; charset=UTF-8" });
  res.end(JSON.stringify({ error: { code, message, status: STATUS[code] ?? "UNKNOWN" } }, null, 2));
}

async function readText(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** Sends `body` to one of the inner mocks and relays its answer as it arrives. */
async function relay(res: ServerResponse, url: string, headers: Record<string, string>, body: string): Promise<void> {
  const up = await fetch(url, { method: "POST", headers, body });
  const h: Record<string, string> = {};
  for (const name of ["content-type", "request-id"]) {
    const v = up.headers.get(name);
    if (v !== null) h[name] = v;
  }
  res.writeHead(up.status, h);
  if (up.body === null) return void res.end();
  try {
    for await (const chunk of chunksOf(up.body)) res.write(chunk);
    res.end();
  } catch {
    res.destroy(); // the inner mock cut its stream: cut this one too
  }
}

const MODEL_PATH =
  /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/(google|anthropic)\/models\/([^/:]+):([A-Za-z]+)$/;

export async function startVertexUpstream(o: VertexMockOptions = {}): Promise<VertexMock> {
  const project = o.project ?? "mock-project";
  const region = o.region ?? "us-central1";
  const [gemini, anthropic] = await Promise.all([startGeminiUpstream(), startAnthropicUpstream()]);
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const other = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const keyId = randomBytes(20).toString("hex");
  const email = `modelgate@${project}.iam.gserviceaccount.com`;
  let n = 0;

  const mock: VertexMock = {
    url: "",
    project,
    region,
    serviceAccount: "",
    wrongKeyServiceAccount: "",
    tokenUri: "",
    requests: [],
    tokenRequests: [],
    tokens: new Map(),
    options: o,
    gemini,
    anthropic,
    close: async () => undefined,
  };

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = new URLSearchParams(await readText(req));
    const fail = (status: number, error: string, description: string) => {
      mock.tokenRequests.push({ claims: {}, issued: null });
      res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
      res.end(JSON.stringify({ error, error_description: description }));
    };
    if (req.headers["content-type"]?.startsWith("application/x-www-form-urlencoded") !== true)
      return fail(400, "invalid_request", "Bad Request");
    if (form.get("grant_type") !== JWT_BEARER) return fail(400, "unsupported_grant_type", "Invalid grant_type");
    const checked = verifyAssertion(form.get("assertion") ?? "", publicKey, keyId, email, [
      GOOGLE_TOKEN_URL,
      mock.tokenUri,
    ]);
    if ("error" in checked) return fail(400, "invalid_grant", checked.error);
    if (mock.options.tokenFailure) {
      const f = mock.options.tokenFailure;
      return fail(f.status, f.error, f.description);
    }
    const expiresIn = mock.options.expiresIn ?? 3599;
    const issued = `ya29.mock-${++n}-${randomBytes(8).toString("hex")}`;
    mock.tokens.set(issued, Date.now() + expiresIn * 1000);
    mock.tokenRequests.push({ claims: checked.claims, issued });
    res.writeHead(200, { "content-type": "application/json; charset=utf-8" });
    res.end(JSON.stringify({ access_token: issued, expires_in: expiresIn, token_type: "Bearer" }));
  }

  async function model(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://mock");
    const text = await readText(req);
    let body: unknown;
    try {
      body = text === "" ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    mock.requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
    const auth = req.headers.authorization;
    const bearer = auth?.startsWith("Bearer ") ? auth.slice(7) : null;
    const until = bearer === null ? undefined : mock.tokens.get(bearer);
    if (until === undefined || until <= Date.now())
      return googleError(
        res,
        401,
        "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
      );
    const m = MODEL_PATH.exec(url.pathname);
    if (req.method !== "POST" || m === null) return googleError(res, 404, `Method not found: ${url.pathname}`);
    const [, p, r, publisher, modelName, method] = m as unknown as string[];
    if (decodeURIComponent(p!) !== project || decodeURIComponent(r!) !== region)
      return googleError(res, 403, `Permission denied on resource project ${decodeURIComponent(p!)}.`);
    const name = decodeURIComponent(modelName!);
    if (body === undefined || typeof body !== "object" || body === null)
      return googleError(res, 400, "Invalid JSON payload received.");
    const b = body as Record<string, unknown>;
    if (publisher === "anthropic") {
      if (method !== "rawPredict" && method !== "streamRawPredict")
        return googleError(res, 404, `Method not found: ${url.pathname}`);
      if (b.anthropic_version !== VERTEX_ANTHROPIC_VERSION)
        return anthropicError(res, 400, `anthropic_version: Input should be '${VERTEX_ANTHROPIC_VERSION}'`);
      if ("model" in b) return anthropicError(res, 400, "model: Extra inputs are not permitted");
      if ((method === "streamRawPredict") !== (b.stream === true))
        return anthropicError(res, 400, "stream: streamRawPredict streams, rawPredict does not");
      const { anthropic_version: _v, anthropic_beta: betas, ...rest } = b;
      const headers: Record<string, string> = {
        "content-type": "application/json",
        "x-api-key": DEFAULT_MOCK_KEY,
        "anthropic-version": "2023-06-01",
      };
      if (Array.isArray(betas)) headers["anthropic-beta"] = betas.join(",");
      return relay(res, `${anthropic.url}/messages`, headers, JSON.stringify({ ...rest, model: name }));
    }
    if (method === "predict") return predict(res, name, b);
    if (method !== "generateContent" && method !== "streamGenerateContent")
      return googleError(res, 404, `Method not found: ${url.pathname}`);
    // Vertex, unlike the Gemini API, refuses a content without its role.
    const contents = Array.isArray(b.contents) ? (b.contents as Record<string, unknown>[]) : [];
    if (contents.some((c) => c.role !== "user" && c.role !== "model"))
      return googleError(res, 400, "Please use a valid role: user, model.");
    return relay(
      res,
      `${gemini.url}/models/${encodeURIComponent(name)}:${method}${url.search}`,
      { "content-type": "application/json", "x-goog-api-key": DEFAULT_MOCK_KEY },
      text,
    );
  }

  /** :predict as Vertex answers it for its embedding models (gemini-embedding-*: one instance a request). */
  function predict(res: ServerResponse, name: string, b: Record<string, unknown>): void {
    const instances = Array.isArray(b.instances) ? (b.instances as Record<string, unknown>[]) : [];
    if (instances.length === 0) return googleError(res, 400, "instances: instances is not specified");
    if (name.startsWith("gemini-embedding") && instances.length > 1)
      return googleError(
        res,
        400,
        `Unable to submit request because the model ${name} only supports 1 instance per request.`,
      );
    const params = (b.parameters ?? {}) as Record<string, unknown>;
    const dims = typeof params.outputDimensionality === "number" ? params.outputDimensionality : undefined;
    const predictions = [];
    for (const inst of instances) {
      if (typeof inst.content !== "string") return googleError(res, 400, "instances[].content: must be a string");
      predictions.push({
        embeddings: {
          statistics: { truncated: false, token_count: mockTokens(inst.content) },
          values: mockEmbedding(inst.content, dims),
        },
      });
    }
    res.writeHead(200, { "content-type": "application/json; charset=UTF-8" });
    res.end(
      JSON.stringify({
        predictions,
        metadata: { billableCharacterCount: instances.reduce((s, i) => s + String(i.content).length, 0) },
      }),
    );
  }

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://mock").pathname;
    const handle = req.method === "POST" && path === "/token" ? token(req, res) : model(req, res);
    handle.catch((err: unknown) => {
      if (!res.headersSent) googleError(res, 500, String(err));
      else res.destroy();
    });
  });
  const { origin, close } = await listen(server, 0);
  mock.url = origin;
  mock.tokenUri = `${origin}/token`;
  const pem = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const otherPem = other.privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  mock.serviceAccount = keyFile(email, pem, keyId, project, mock.tokenUri);
  mock.wrongKeyServiceAccount = keyFile(email, otherPem, keyId, project, mock.tokenUri);
  mock.close = async () => {
    await Promise.all([close(), gemini.close(), anthropic.close()]);
  };
  return mock;
}

function anthropicError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ type: "error", error: { type: "invalid_request_error", message } }));
}
