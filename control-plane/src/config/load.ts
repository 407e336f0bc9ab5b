import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { routeProtocol } from "../services/upstream-provider.ts";
import { configSchema, type GatewayConfig } from "./schema.ts";

/** ${VAR} is read from the environment; a missing variable is an error, not an empty credential. */
export function interpolateEnv(text: string, env: NodeJS.ProcessEnv = process.env): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
    const v = env[name];
    if (v === undefined) throw new Error(`config refers to \${${name}}, which is not set in the environment`);
    return v;
  });
}

export function parseConfig(text: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig {
  const raw: unknown = parseYaml(interpolateEnv(text, env)); // YAML is a superset of JSON
  const result = configSchema.safeParse(raw ?? {});
  if (!result.success) {
    const issues = result.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
    throw new Error(`invalid gateway config: ${issues}`);
  }
  const byName = new Map(result.data.upstreams.map((u) => [u.name, u]));
  for (const u of result.data.upstreams) {
    // The file is read now (at start and on every reload), so the data planes never need it.
    if (u.credentialsFile !== undefined) u.serviceAccount = readServiceAccount(u.name, u.credentialsFile);
  }
  for (const m of result.data.models) {
    // A fallback may name a model the file does not (one made through the API); itself, or twice, is a mistake.
    if (m.fallbacks.includes(m.id)) throw new Error(`invalid gateway config: model ${m.id} names itself as a fallback`);
    if (new Set(m.fallbacks).size !== m.fallbacks.length)
      throw new Error(`invalid gateway config: model ${m.id} names a fallback twice`);
    for (const r of m.routes) {
      const u = byName.get(r.upstream);
      if (u === undefined)
        throw new Error(`invalid gateway config: model ${m.id} routes to unknown upstream ${r.upstream}`);
      let protocol: string;
      try {
        protocol = routeProtocol(u.provider ?? "direct", u.protocol ?? null, r.model);
      } catch (err) {
        throw new Error(`invalid gateway config: model ${m.id} route to ${r.upstream}: ${(err as Error).message}`);
      }
      // Only OpenAI and Gemini upstreams make embeddings.
      if (m.type === "embedding" && protocol !== "openai" && protocol !== "gemini") {
        throw new Error(
          `invalid gateway config: embedding model ${m.id} routes to upstream ${r.upstream}, whose protocol ${protocol} makes no embeddings (use openai or gemini)`,
        );
      }
    }
  }
  return result.data;
}

export const loadConfigFile = (path: string, env: NodeJS.ProcessEnv = process.env): GatewayConfig =>
  parseConfig(readFileSync(path, "utf8"), env);

/** A Google credentials file's text, checked to be one (its content is never put in an error). */
function readServiceAccount(upstream: string, path: string): string {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new Error(
      `invalid gateway config: upstream ${upstream}: cannot read credentialsFile ${path} (${(err as NodeJS.ErrnoException).code ?? "error"})`,
    );
  }
  let type: unknown;
  try {
    type = (JSON.parse(text) as { type?: unknown }).type;
  } catch {
    throw new Error(`invalid gateway config: upstream ${upstream}: credentialsFile ${path} is not JSON`);
  }
  if (type !== "service_account" && type !== "authorized_user" && type !== "external_account")
    throw new Error(
      `invalid gateway config: upstream ${upstream}: credentialsFile ${path} is not a Google credentials file`,
    );
  return text;
}
