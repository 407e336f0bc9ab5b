// What an upstream call needs of an AbortSignal: whether (and why) the client went away, and a listener.
// Every request used to create an AbortController, whose EventTarget creation and listener bookkeeping
// showed in profiles of the request path; CallAbort is a plain object of the same shape. A real AbortSignal
// fits wherever an AbortLike is taken (tests use them).

export interface AbortLike {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: "abort", listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: "abort", listener: () => void): void;
}

/** A one-shot abort: listeners run once, when abort() is first called. */
export class CallAbort implements AbortLike {
  aborted = false;
  reason: unknown = undefined;
  private listeners: (() => void)[] | null = null;

  addEventListener(_type: "abort", listener: () => void): void {
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: "abort", listener: () => void): void {
    const i = this.listeners?.indexOf(listener) ?? -1;
    if (i >= 0) this.listeners!.splice(i, 1);
  }

  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason ?? Object.assign(new Error("The operation was aborted"), { name: "AbortError" });
    const listeners = this.listeners;
    this.listeners = null;
    if (listeners !== null) for (const l of listeners) l();
  }
}
