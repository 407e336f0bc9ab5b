// What an upstream's refusal says about the key that made the call, rather than about the request.

/** auth: the key is refused (revoked, wrong); quota: its money or quota is gone; rate: it is rate limited. */
export type KeyFault = "auth" | "quota" | "rate" | "server";

// OpenAI's insufficient_quota (a 429) and billing_hard_limit_reached, Anthropic's "credit balance is too low"
// (a 400), Gemini's RESOURCE_EXHAUSTED with a billing message.
const QUOTA =
  /insufficient_quota|billing_hard_limit|credit balance is too low|billing (?:account|details)|exceeded your current quota/i;

/** The key's part in an answer of `status` with this body (null: the request's own fault, or none). */
export function keyFaultOf(status: number, body: string): KeyFault | null {
  if (status === 401 || status === 403) return "auth";
  if (status === 402) return "quota";
  if ((status === 429 || status === 400) && QUOTA.test(body.slice(0, 4096))) return "quota";
  if (status === 429) return "rate";
  if (status >= 500 && status <= 599) return "server";
  return null;
}

/** Whether the body must be read to tell (a 429 or a 400 might be a quota). */
export const needsBody = (status: number): boolean => status === 429 || status === 400;
