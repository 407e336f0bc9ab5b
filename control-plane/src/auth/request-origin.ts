import type { IncomingMessage } from "node:http";
import type { TLSSocket } from "node:tls";
import { compileAllowlist } from "@modelgate/data-plane";
import { resolveClientIp } from "@modelgate/data-plane";

// Where a control-plane request came from: the client's address and whether it arrived over HTTPS. Proxies'
// X-Forwarded-For and X-Forwarded-Proto are believed only from MODELGATE_TRUSTED_PROXIES, as on the data plane.

const trusted = compileAllowlist(
  (process.env.MODELGATE_TRUSTED_PROXIES ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean),
);

export interface RequestOrigin {
  clientIp: string | null;
  /** the browser spoke HTTPS (to us, or to a trusted proxy that says so) */
  https: boolean;
}

export function requestOrigin(req: IncomingMessage | undefined): RequestOrigin {
  if (!req) return { clientIp: null, https: false };
  const peer = req.socket.remoteAddress;
  const clientIp = resolveClientIp(peer, req.headers["x-forwarded-for"], trusted);
  const direct = (req.socket as TLSSocket).encrypted === true;
  const fromTrusted = trusted !== null && peer !== undefined && trusted.matches(peer.replace(/^::ffff:/, ""));
  const proto = req.headers["x-forwarded-proto"];
  const forwardedHttps =
    fromTrusted && (Array.isArray(proto) ? proto[0] : proto)?.split(",")[0]?.trim().toLowerCase() === "https";
  return { clientIp, https: direct || forwardedHttps };
}
