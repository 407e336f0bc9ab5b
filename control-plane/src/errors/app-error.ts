// Errors the services throw on purpose. Each carries a stable code the API surfaces as `extensions.code`;
// anything else that escapes a service is an internal error and is masked.

export type ErrorCode =
  | "UNAUTHENTICATED"
  | "FORBIDDEN"
  | "BAD_USER_INPUT"
  | "NOT_FOUND"
  | "CONFLICT"
  | "TOO_MANY_REQUESTS"
  /** a documented cap (keys per account, exports kept per account) is reached */
  | "LIMIT_EXCEEDED"
  | "SECOND_STEP_REQUIRED";

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "AppError";
  }
}

export const badInput = (message: string, field?: string) =>
  new AppError("BAD_USER_INPUT", message, field ? { field } : {});
export const notFound = (what: string) => new AppError("NOT_FOUND", `${what} not found`);
export const forbidden = (message = "you may not do this") => new AppError("FORBIDDEN", message);
export const unauthenticated = (message = "sign in first") => new AppError("UNAUTHENTICATED", message);
