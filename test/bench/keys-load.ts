import { performance } from "node:perf_hooks";
import { Pool } from "undici";

// The open-loop load of `npm run bench:keys`, in a process of its own: RATE chat completions per second,
// each with one of KEY_COUNT bench keys (sk-mg-bench-<i>, spread over the key set), every send and latency
// recorded by wall-clock send time so the harness can ask for any window. IPC: {report:[from,to]} answers
// the window's latencies; {stop:true} ends the process.

const target = process.env.TARGET!;
const rate = Number(process.env.RATE ?? 300);
const keyTotal = Number(process.env.KEY_TOTAL);
const keyCount = Math.min(keyTotal, Number(process.env.KEY_COUNT ?? 10_000));
const model = process.env.MODEL!;
const pool = new Pool(target, { connections: 128, pipelining: 1, keepAliveTimeout: 30_000 });
const body = JSON.stringify({ model, messages: [{ role: "user", content: "hi" }] });
// key numbers 1..keyTotal, spread evenly: the load touches keys all over the shards
const keys = Array.from(
  { length: keyCount },
  (_, i) => `Bearer sk-mg-bench-${1 + Math.floor((i * keyTotal) / keyCount)}`,
);

const sent: number[] = [];
const latency: number[] = [];
const status: number[] = [];
const origin = performance.timeOrigin;
let n = 0;
let running = true;

function fire(): void {
  const i = sent.length;
  const t0 = performance.now();
  sent.push(origin + t0);
  latency.push(Infinity);
  status.push(0);
  pool
    .request({
      path: "/v1/chat/completions",
      method: "POST",
      headers: { authorization: keys[n++ % keys.length]!, "content-type": "application/json" },
      body,
    })
    .then(async (res) => {
      await res.body.dump({ limit: Infinity });
      latency[i] = performance.now() - t0;
      status[i] = res.statusCode;
    })
    .catch(() => {
      latency[i] = performance.now() - t0;
      status[i] = -1;
    });
}

// Sends on schedule (catching up if the loop was late): an open loop, so a stall shows as latency.
const start = performance.now();
const tick = () => {
  if (!running) return;
  const due = Math.floor(((performance.now() - start) * rate) / 1000);
  while (sent.length < due) fire();
  setTimeout(tick, 1);
};
tick();

process.on("message", (m: { report?: [number, number]; stop?: boolean }) => {
  if (m.report) {
    const [from, to] = m.report;
    const lat: number[] = [];
    let failed = 0;
    for (let i = 0; i < sent.length; i++) {
      if (sent[i]! < from || sent[i]! >= to) continue;
      lat.push(latency[i]!);
      if (status[i] !== 200) failed++;
    }
    process.send!({ latencies: lat, failed });
  }
  if (m.stop) {
    running = false;
    void pool.close().finally(() => process.exit(0));
  }
});
