import { GatewayError } from "../errors.ts";

export const badAnswer = (): GatewayError =>
  new GatewayError("upstream", "upstream_bad_response", "The upstream answered embeddings the gateway cannot read.");
