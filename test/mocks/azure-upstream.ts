// A mock Azure OpenAI resource that enforces what Azure does about auth, paths and versions, with Azure's
// annotations on OpenAI's wire format:
// - the `api-key` header (or an Entra ID bearer the test names): Azure's 401 otherwise;
// - the deployments form, /openai/deployments/{deployment}/chat/completions|embeddings?api-version=…, and
//   /openai/responses?api-version=…: without a supported api-version, Azure's 404 "Resource not found";
//   an unknown deployment, DeploymentNotFound;
// - the v1 form, /openai/v1/chat/completions|responses|embeddings, with no api-version;
// - chat completions carry content-filter results: a stream opens with a chunk of prompt_filter_results and
//   no choices (id, model and created empty), every choice has content_filter_results, and a finish reason
//   content_filter has a filtered category; a whole answer has prompt_filter_results beside its choices.
// The answers themselves come from the OpenAI mock (its reply queue scripts them).

import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { startOpenAIUpstream } from "./openai-upstream.ts";
import { DEFAULT_MOCK_KEY, type MockUpstream, chunksOf, listen } from "./script.ts";

export const AZURE_API_VERSIONS = ["2024-10-21", "2025-04-01-preview"];

export interface AzureRequest {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: unknown;
}

export interface AzureMockOptions {
  apiKey?: string;
  /** an Entra ID bearer the resource also takes (issued by `/msi/token` too) */
  entraToken?: string;
  /** the deployments that exist (default: any name) */
  deployments?: string[];
}

export interface AzureMock {
  /** the resource's endpoint, https://RESOURCE.openai.azure.com in real life */
  url: string;
  apiKey: string;
  /**
   * A managed identity's token endpoint as App Service and Container Apps offer it (IDENTITY_ENDPOINT, with
   * IDENTITY_HEADER = `identityHeader`): what @azure/identity's DefaultAzureCredential finds in the
   * environment. It issues `entraToken` for the Cognitive Services resource.
   */
  identityEndpoint: string;
  identityHeader: string;
  /** the token requests the identity endpoint answered */
  identityRequests: number;
  requests: AzureRequest[];
  /** script the answers on this */
  openai: MockUpstream;
  close(): Promise<void>;
}

const SAFE = { filtered: false, severity: "safe" };
const safeResults = () => ({ hate: SAFE, self_harm: SAFE, sexual: SAFE, violence: SAFE });
const filteredResults = () => ({ ...safeResults(), violence: { filtered: true, severity: "high" } });
const promptFilterResults = () => [{ prompt_index: 0, content_filter_results: safeResults() }];

function azureError(res: ServerResponse, status: number, code: string, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { code, message } }));
}

async function readText(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

type Choice = Record<string, unknown> & { finish_reason?: unknown };

/** Azure's annotation of one choice: every choice is judged, a content_filter finish has its category. */
const annotate = (c: Choice): Choice => ({
  ...c,
  content_filter_results: c.finish_reason === "content_filter" ? filteredResults() : safeResults(),
});

/** One stream event of the OpenAI mock, as Azure sends it. */
function azureEvent(data: string): string {
  if (data === "[DONE]") return data;
  const chunk = JSON.parse(data) as { choices?: Choice[] } & Record<string, unknown>;
  const { service_tier: _t, ...rest } = chunk;
  return JSON.stringify({ ...rest, choices: (chunk.choices ?? []).map(annotate) });
}

async function relayChat(res: ServerResponse, up: Response, stream: boolean): Promise<void> {
  if (up.status !== 200 || up.body === null) {
    res.writeHead(up.status, { "content-type": up.headers.get("content-type") ?? "application/json" });
    return void res.end(await up.text());
  }
  if (!stream) {
    const body = (await up.json()) as { choices?: Choice[] } & Record<string, unknown>;
    res.writeHead(200, { "content-type": "application/json" });
    return void res.end(
      JSON.stringify({
        ...body,
        choices: (body.choices ?? []).map(annotate),
        prompt_filter_results: promptFilterResults(),
      }),
    );
  }
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
  res.write(
    `data: ${JSON.stringify({ choices: [], created: 0, id: "", model: "", object: "", prompt_filter_results: promptFilterResults() })}\n\n`,
  );
  let tail = "";
  try {
    for await (const bytes of chunksOf(up.body)) {
      tail += Buffer.from(bytes).toString("utf8");
      let end: number;
      while ((end = tail.indexOf("\n\n")) !== -1) {
        const event = tail.slice(0, end);
        tail = tail.slice(end + 2);
        if (!event.startsWith("data: ")) continue;
        res.write(`data: ${azureEvent(event.slice(6))}\n\n`);
      }
    }
    res.end();
  } catch {
    res.destroy();
  }
}

const DEPLOYMENT = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings)$/;
const V1 = /^\/openai\/v1\/(chat\/completions|responses|embeddings)$/;

export async function startAzureUpstream(o: AzureMockOptions = {}): Promise<AzureMock> {
  const apiKey = o.apiKey ?? "azure-test-key-0123456789abcdef";
  const openai = await startOpenAIUpstream();
  const mock: AzureMock = {
    url: "",
    apiKey,
    identityEndpoint: "",
    identityHeader: "identity-header-0123456789",
    identityRequests: 0,
    requests: [],
    openai,
    close: async () => undefined,
  };

  /** App Service's managed identity protocol (api-version 2019-08-01). */
  function identity(url: URL, req: IncomingMessage, res: ServerResponse): void {
    const refuse = (status: number, message: string) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify({ statusCode: status, message }));
    };
    if (req.headers["x-identity-header"] !== mock.identityHeader) return refuse(401, "missing X-IDENTITY-HEADER");
    if (url.searchParams.get("api-version") !== "2019-08-01") return refuse(400, "unsupported api-version");
    if (url.searchParams.get("resource") !== "https://cognitiveservices.azure.com" || o.entraToken === undefined)
      return refuse(400, "no identity for this resource");
    mock.identityRequests++;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        access_token: o.entraToken,
        expires_on: String(Math.floor(Date.now() / 1000) + 3600),
        resource: "https://cognitiveservices.azure.com",
        token_type: "Bearer",
      }),
    );
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://mock");
    if (req.method === "GET" && url.pathname === "/msi/token") return identity(url, req, res);
    const text = await readText(req);
    let body: Record<string, unknown> | undefined;
    try {
      body = text === "" ? undefined : (JSON.parse(text) as Record<string, unknown>);
    } catch {
      body = undefined;
    }
    mock.requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body });
    const bearer = req.headers.authorization?.startsWith("Bearer ") ? req.headers.authorization.slice(7) : null;
    const keyed = req.headers["api-key"] === apiKey;
    const entra = o.entraToken !== undefined && bearer === o.entraToken;
    if (!keyed && !entra)
      return azureError(
        res,
        401,
        "401",
        "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.",
      );
    if (req.method !== "POST" || body === undefined) return azureError(res, 404, "404", "Resource not found");
    let op: string;
    const v1 = V1.exec(url.pathname);
    if (v1) {
      op = v1[1]!;
      if (url.searchParams.has("api-version") && url.searchParams.get("api-version") !== "preview")
        return azureError(res, 400, "BadRequest", "API version not supported");
    } else {
      const version = url.searchParams.get("api-version");
      if (version === null || !AZURE_API_VERSIONS.includes(version))
        return azureError(res, 404, "404", "Resource not found");
      const d = DEPLOYMENT.exec(url.pathname);
      if (d) {
        const deployment = decodeURIComponent(d[1]!);
        if (o.deployments !== undefined && !o.deployments.includes(deployment))
          return azureError(
            res,
            404,
            "DeploymentNotFound",
            "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.",
          );
        // The deployment is the model; whatever the body names is ignored.
        body = { ...body, model: deployment };
        op = d[2]!;
      } else if (url.pathname === "/openai/responses") op = "responses";
      else return azureError(res, 404, "404", "Resource not found");
    }
    if (typeof body.model !== "string") return azureError(res, 400, "BadRequest", "model is required");
    const up = await fetch(`${openai.url}/${op}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${DEFAULT_MOCK_KEY}` },
      body: JSON.stringify(body),
    });
    if (op === "chat/completions") return relayChat(res, up, body.stream === true);
    res.writeHead(up.status, { "content-type": up.headers.get("content-type") ?? "application/json" });
    if (up.body === null) return void res.end();
    try {
      for await (const chunk of chunksOf(up.body)) res.write(chunk);
      res.end();
    } catch {
      res.destroy();
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) azureError(res, 500, "InternalServerError", String(err));
      else res.destroy();
    });
  });
  const { origin, close } = await listen(server, 0);
  mock.url = origin;
  mock.identityEndpoint = `${origin}/msi/token`;
  mock.close = async () => {
    await Promise.all([close(), openai.close()]);
  };
  return mock;
}
