import type { Dispatcher } from "undici";
import { util } from "undici";
import { GatewayError } from "../errors.ts";
import type { AbortLike } from "./call-abort.ts";
import type { UpstreamResponse } from "./transport.ts";

/** What the gateway accepts of one upstream answer (docs/security.md, "Upstream answers"). */
export interface AnswerLimits {
  /** bytes of a body read whole (text(): a non-streamed answer, an error body) */
  maxBytes: number;
  /** from the status line to the body's end, whatever flows meanwhile */
  maxMs: number;
}

// One upstream call as an undici dispatch handler. undici's request() wraps every response in a Readable
// stream inside an AsyncResource and listens for aborts through an EventTarget; on the request path that
// machinery cost more than the call's own bytes. Here the body is a plain queue of the chunks undici hands
// over, read as an async iterable (streams) or all at once (text()), with the same backpressure: past
// HIGH_WATER bytes unread, undici stops reading the socket until the reader catches up.

const HIGH_WATER = 64 * 1024;

export class ResponseHandler implements Dispatcher.DispatchHandler, AsyncIterable<Buffer> {
  /** Settles with the response once its head arrives, or with the error that came first. */
  readonly response: Promise<UpstreamResponse>;
  private resolveHead!: (r: UpstreamResponse) => void;
  private rejectHead!: (err: Error) => void;
  private headSeen = false;
  private abortCall: ((reason?: Error) => void) | null = null;
  private resume: (() => void) | null = null;
  private paused = false;
  private chunks: Buffer[] = [];
  private head = 0;
  private buffered = 0;
  private done = false;
  private failure: Error | null = null;
  private wake: (() => void) | null = null;
  private consumed = false;
  /** text() is reading: everything is wanted, so the socket is never paused */
  private collecting = false;

  /** bytes received so far (the whole body, read or not) */
  private received = 0;
  private lifetime: NodeJS.Timeout | null = null;

  constructor(
    private readonly signal: AbortLike,
    private readonly limits: AnswerLimits | null = null,
  ) {
    this.response = new Promise((resolve, reject) => {
      this.resolveHead = resolve;
      this.rejectHead = reject;
    });
    signal.addEventListener("abort", this.onAbort, { once: true });
  }

  private readonly onAbort = (): void => {
    const reason = abortReason(this.signal);
    if (this.abortCall) this.abortCall(reason);
    else this.onError(reason); // not connected yet: onConnect will abort the call
  };

  onConnect(abort: (reason?: Error) => void): void {
    if (this.signal.aborted) abort(abortReason(this.signal));
    else this.abortCall = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) return true; // 1xx: the final head follows
    this.headSeen = true;
    this.resume = resume;
    if (this.limits !== null) {
      // An answer that never ends (a byte now and then keeps the idle timeout quiet) is cut at the limit.
      const maxMs = this.limits.maxMs;
      this.lifetime = setTimeout(
        () =>
          this.refuse(
            new GatewayError(
              "upstream",
              "upstream_answer_too_long",
              `The upstream's answer took longer than the gateway allows (${Math.round(maxMs / 1000)} s).`,
            ),
          ),
        maxMs,
      );
      this.lifetime.unref();
    }
    // Parsed when read: only a failed call's Retry-After looks at them, so a successful one never pays for it.
    let headers: UpstreamResponse["headers"] | null = null;
    this.resolveHead({
      status: statusCode,
      get headers() {
        return (headers ??= util.parseHeaders(rawHeaders) as UpstreamResponse["headers"]);
      },
      body: this,
      text: () => this.text(),
    });
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.failure) return true;
    this.received += chunk.length;
    if (this.collecting && this.overSize()) return true;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    this.notify();
    if (this.collecting || this.buffered < HIGH_WATER) return true;
    this.paused = true;
    return false;
  }

  onComplete(): void {
    this.done = true;
    this.finish();
  }

  onError(err: Error): void {
    if (this.done || this.failure) return;
    this.failure = err;
    if (!this.headSeen) this.rejectHead(err);
    this.finish();
  }

  private finish(): void {
    this.signal.removeEventListener("abort", this.onAbort);
    if (this.lifetime !== null) clearTimeout(this.lifetime);
    this.lifetime = null;
    this.notify();
  }

  /** A body read whole past the limit: the answer is refused and the upstream call ended. */
  private overSize(): boolean {
    if (this.limits === null || this.received <= this.limits.maxBytes) return false;
    this.refuse(
      new GatewayError(
        "upstream",
        "upstream_answer_too_large",
        `The upstream's answer is larger than the gateway accepts (${this.limits.maxBytes} bytes).`,
      ),
    );
    return true;
  }

  /** Fails the answer with the gateway's own verdict and frees what it held; the upstream call is aborted. */
  private refuse(err: GatewayError): void {
    if (this.done || this.failure) return;
    this.chunks = [];
    this.head = 0;
    this.buffered = 0;
    this.onError(err);
    this.abortCall?.(err);
  }

  private notify(): void {
    const w = this.wake;
    if (w) {
      this.wake = null;
      w();
    }
  }

  private take(): Buffer | null {
    if (this.head === this.chunks.length) return null;
    const c = this.chunks[this.head]!;
    this.chunks[this.head++] = EMPTY;
    if (this.head === this.chunks.length) {
      this.chunks = [];
      this.head = 0;
    }
    this.buffered -= c.length;
    if (this.paused && this.buffered < HIGH_WATER / 2) {
      this.paused = false;
      this.resume?.();
    }
    return c;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Buffer> {
    this.claim();
    try {
      for (;;) {
        const c = this.take();
        if (c !== null) {
          yield c;
          continue;
        }
        if (this.failure) throw this.failure;
        if (this.done) return;
        await new Promise<void>((r) => (this.wake = r));
      }
    } finally {
      // The reader stopped early (a client gone, an error in the relay): free the connection.
      if (!this.done && !this.failure) this.abortCall?.(new Error("upstream body not read to the end"));
    }
  }

  /** The whole body as UTF-8 (decoded once, so characters split across chunks survive). */
  async text(): Promise<string> {
    this.claim();
    this.collecting = true;
    this.overSize();
    if (this.paused) {
      this.paused = false;
      this.resume?.();
    }
    for (;;) {
      if (this.failure) throw this.failure;
      if (this.done) break;
      await new Promise<void>((r) => (this.wake = r));
    }
    const parts = this.head === 0 ? this.chunks : this.chunks.slice(this.head);
    this.chunks = [];
    this.head = 0;
    this.buffered = 0;
    return parts.length === 1 ? parts[0]!.toString("utf8") : Buffer.concat(parts).toString("utf8");
  }

  private claim(): void {
    if (this.consumed) throw new Error("upstream body already read");
    this.consumed = true;
  }
}

const EMPTY = Buffer.alloc(0);

const abortReason = (signal: AbortLike): Error => {
  const r: unknown = signal.reason;
  return r instanceof Error
    ? r
    : Object.assign(new Error("The operation was aborted"), { name: "AbortError", code: "UND_ERR_ABORTED" });
};
