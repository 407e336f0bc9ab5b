import type { CombinedError } from "@urql/vue";

// Turns API errors into sentences that say what happened and what to do.

export interface FieldErrors {
  [field: string]: string;
}

function codeOf(error: CombinedError): string | undefined {
  const code = error.graphQLErrors[0]?.extensions?.code;
  return typeof code === "string" ? code : undefined;
}

export function isUnauthenticated(error: CombinedError | undefined): boolean {
  if (!error) return false;
  if (error.graphQLErrors.some((e) => e.extensions?.code === "UNAUTHENTICATED")) return true;
  const status = (error.response as { status?: number } | undefined)?.status;
  return status === 401;
}

const capitalise = (s: string) => (s ? s[0]!.toUpperCase() + s.slice(1) : s);
const sentence = (s: string) => capitalise(/[.!?]$/.test(s) ? s : `${s}.`);

export function describeError(error: CombinedError | undefined | null): string {
  if (!error) return "";
  if (error.networkError && error.graphQLErrors.length === 0) {
    return "The server cannot be reached. Check your connection, then try again.";
  }
  const first = error.graphQLErrors[0];
  const message = first?.message ?? error.message;
  switch (codeOf(error)) {
    case "UNAUTHENTICATED":
      return `${sentence(message)} Sign in again.`;
    case "FORBIDDEN":
      return `${sentence(message)} Ask an owner of the account if you need this.`;
    case "TOO_MANY_REQUESTS":
      return `${sentence(message)} Wait a moment before trying again.`;
    case "INTERNAL_SERVER_ERROR":
      return "Something went wrong on the server. Try again; if it keeps happening, contact support.";
    case "CSRF":
      return "The request was refused as a possible cross-site request. Reload the page and try again.";
    default:
      return sentence(message);
  }
}

/** Errors that name an input field (`extensions.field`), by field, for display next to the input. */
export function fieldErrors(error: CombinedError | undefined | null): FieldErrors {
  const out: FieldErrors = {};
  for (const e of error?.graphQLErrors ?? []) {
    const field = e.extensions?.field;
    if (typeof field === "string") out[field] = sentence(e.message);
  }
  return out;
}
