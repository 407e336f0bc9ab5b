// Where Vertex's endpoints are: the regional (or global) host, and a publisher's models under a project.

import type { RouteSnapshot } from "../../contract/index.ts";

/** The default root for a region: `https://{region}-aiplatform.googleapis.com`, the global one without a prefix. */
export function vertexRoot(options: Readonly<Record<string, string>>): string | null {
  const region = options.region;
  if (!region) return null;
  return region === "global" ? "https://aiplatform.googleapis.com" : `https://${region}-aiplatform.googleapis.com`;
}

/**
 * `{root}/v1/projects/{project}/locations/{region}/publishers/{publisher}` for a route; the root is its base
 * URL as the operator wrote it (a trailing /v1 is taken as the version already given).
 */
export function publisherBase(route: RouteSnapshot, publisher: "google" | "anthropic"): string {
  const o = route.providerOptions ?? {};
  const root = route.baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
  return `${root}/v1/projects/${encodeURIComponent(o.project ?? "")}/locations/${encodeURIComponent(o.region ?? "")}/publishers/${publisher}`;
}

/** A model name in a Vertex path: `claude-sonnet-4-5@20250929` keeps its `@`, as Google's own clients send it. */
export const modelSegment = (model: string): string => encodeURIComponent(model).replaceAll("%40", "@");
