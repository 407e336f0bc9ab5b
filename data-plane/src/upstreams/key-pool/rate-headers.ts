// What a provider's answer says is left of a key's rate limits: OpenAI's x-ratelimit-remaining-requests /
// -tokens beside x-ratelimit-limit-*, Anthropic's anthropic-ratelimit-{requests,tokens,input-tokens,
// output-tokens}-{remaining,limit}. The smallest share left is the key's headroom (1: untouched, 0: exhausted);
// null when the answer carries none of them.

type Headers = Record<string, string | string[] | undefined>;

const PAIRS: readonly (readonly [remaining: string, limit: string])[] = [
  ["x-ratelimit-remaining-requests", "x-ratelimit-limit-requests"],
  ["x-ratelimit-remaining-tokens", "x-ratelimit-limit-tokens"],
  ["anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-limit"],
  ["anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-limit"],
  ["anthropic-ratelimit-input-tokens-remaining", "anthropic-ratelimit-input-tokens-limit"],
  ["anthropic-ratelimit-output-tokens-remaining", "anthropic-ratelimit-output-tokens-limit"],
];

const num = (v: string | string[] | undefined): number | null => {
  const s = Array.isArray(v) ? v[0] : v;
  if (s === undefined || !/^\d+(\.\d+)?$/.test(s.trim())) return null;
  return Number(s);
};

export function rateHeadroom(headers: Headers): number | null {
  let least: number | null = null;
  for (const [r, l] of PAIRS) {
    const remaining = num(headers[r]);
    const limit = num(headers[l]);
    if (remaining === null || limit === null || limit <= 0) continue;
    const share = Math.min(1, remaining / limit);
    if (least === null || share < least) least = share;
  }
  return least;
}

/**
 * How much a key with this headroom is preferred: fully above 20 % left, then in proportion down to a floor
 * (an exhausted key is still tried when every other key is too, rather than never).
 */
export function headroomFactor(headroom: number): number {
  if (headroom >= 0.2) return 1;
  return Math.max(0.02, headroom / 0.2);
}
