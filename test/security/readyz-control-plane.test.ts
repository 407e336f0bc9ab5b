import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway } from "../helpers/gateway.ts";
import { eventually } from "../helpers/processes.ts";

// Issue 12, item 17: /readyz must see a stopped control plane. The replica's own snapshot age counts from its
// last Redis check, so it stayed small while the control plane was frozen; now /readyz also reports the age of
// the snapshot the control plane published and the control plane's heartbeat.

let gw: Gateway;

interface Readyz {
  status: string;
  snapshotAgeMs: number | null;
  publishedSnapshotAgeMs: number | null;
  controlPlane: { state: string; heartbeatAgeMs: number | null };
}
const readyz = async () => (await (await fetch(`${gw.bases[0]}/readyz`)).json()) as Readyz;

beforeAll(async () => {
  gw = await startGateway("distributed", { config: {}, replicas: 1, env: { MODELGATE_REPUBLISH_MS: "1000" } });
}, 240_000);

afterAll(async () => {
  gw?.procs[0]?.child.kill("SIGCONT");
  await gw?.stop();
});

describe("/readyz and a frozen control plane", () => {
  it("shows the control plane up, then silent while it is frozen, and serving all along", async () => {
    const up = await eventually(readyz, (r) => r.controlPlane.state === "up", 10_000);
    expect(up.controlPlane.heartbeatAgeMs).toBeLessThan(5_000);
    expect(up.publishedSnapshotAgeMs).toBeLessThan(5_000);

    const controlPlane = gw.procs[0]!.child;
    controlPlane.kill("SIGSTOP");
    try {
      // The heartbeat and the last publication are written at different moments, so the heartbeat can pass 5 s a
      // few milliseconds before the publication does: wait for both, each bounded by the same 15 s.
      const frozen = await eventually(
        readyz,
        (r) => r.controlPlane.state === "silent" && (r.publishedSnapshotAgeMs ?? 0) > 5_000,
        15_000,
        250,
      );
      expect(frozen.status).toBe("ready"); // fail static: still serving from the last snapshot
      expect(frozen.snapshotAgeMs).toBeLessThan(2_000); // the replica still confirms with Redis: not the signal
      expect(frozen.publishedSnapshotAgeMs).toBeGreaterThan(5_000);
      expect(frozen.controlPlane.heartbeatAgeMs ?? Infinity).toBeGreaterThanOrEqual(5_000);
    } finally {
      controlPlane.kill("SIGCONT");
    }
    const back = await eventually(
      readyz,
      (r) => r.controlPlane.state === "up" && (r.publishedSnapshotAgeMs ?? Infinity) < 5_000,
      15_000,
      250,
    );
    expect(back.status).toBe("ready");
  });
});
