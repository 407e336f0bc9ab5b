import { Agent, request } from "node:http";

// The /healthz poller of healthz-stall.test.ts, shared by the tests that measure how long one request holds
// the server's event loop: back-to-back GETs on one kept-alive connection, the slowest answer kept.

/** answers in a baseline: about what a poller sees in half a second on an idle server */
export const QUIET_ANSWERS = 300;

export function healthzPoller(
  base: string,
  /** false: a failed poll counts as the time it took (to measure a server that drops connections) */
  failOnError = true,
): { worstQuiet(answers?: number): Promise<number>; worstDuring(work: () => Promise<unknown>): Promise<number> } {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const { hostname, port } = new URL(base);
  const once = (): Promise<number> => {
    const started = performance.now();
    return new Promise((resolve, reject) => {
      const req = request({ host: hostname, port, path: "/healthz", agent }, (res) => {
        res.resume();
        res.on("end", () => resolve(performance.now() - started));
      });
      req.on("error", (err) => (failOnError ? reject(err) : resolve(performance.now() - started)));
      req.end();
    });
  };
  let warm = false;
  const warmUp = async () => {
    if (!warm) for (let i = 0; i < 20; i++) await once();
    warm = true;
  };
  return {
    /** The slowest of `answers` back-to-back /healthz answers with nothing else running: the baseline. */
    async worstQuiet(answers = QUIET_ANSWERS) {
      await warmUp();
      let worst = 0;
      for (let i = 0; i < answers; i++) worst = Math.max(worst, await once());
      return worst;
    },
    /** The slowest /healthz answer while `work` runs. */
    async worstDuring(work) {
      await warmUp();
      let done = false;
      let worst = 0;
      const poll = (async () => {
        while (!done) worst = Math.max(worst, await once());
      })();
      await once();
      try {
        await work();
      } finally {
        done = true;
        await poll;
      }
      return worst;
    },
  };
}
