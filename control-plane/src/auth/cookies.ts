export const SESSION_COOKIE = "mg_session";

/** Parses a Cookie header into a map; the first occurrence of a name wins. */
export function parseCookies(header: string | null | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (!header) return out;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (out.has(name)) continue;
    let value = part.slice(eq + 1).trim();
    if (value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    try {
      out.set(name, decodeURIComponent(value));
    } catch {
      out.set(name, value);
    }
  }
  return out;
}

export interface CookieOptions {
  secure: boolean;
  /** seconds; 0 deletes the cookie */
  maxAge: number;
}

/** An HttpOnly, SameSite=Lax cookie (Lax: it still comes back on the top-level redirect from an identity provider). */
export function serializeCookie(name: string, value: string, opts: CookieOptions & { path?: string }): string {
  const parts = [
    `${name}=${encodeURIComponent(value)}`,
    `Path=${opts.path ?? "/"}`,
    "HttpOnly",
    "SameSite=Lax",
    `Max-Age=${opts.maxAge}`,
  ];
  if (opts.maxAge === 0) parts.push("Expires=Thu, 01 Jan 1970 00:00:00 GMT");
  if (opts.secure) parts.push("Secure");
  return parts.join("; ");
}

export const serializeSessionCookie = (value: string, opts: CookieOptions): string =>
  serializeCookie(SESSION_COOKIE, value, opts);
