import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
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
  const protocolOf = new Map(result.data.upstreams.map((u) => [u.name, u.protocol]));
  for (const m of result.data.models) {
    for (const r of m.routes) {
      const protocol = protocolOf.get(r.upstream);
      if (protocol === undefined)
        throw new Error(`invalid gateway config: model ${m.id} routes to unknown upstream ${r.upstream}`);
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
