import { setFlagsFromString } from "node:v8";

// How far V8 lets the old generation grow past what the last full collection left alive. Under load most of
// what reaches the old generation is garbage already: objects of calls still in flight when two young
// collections ran (a call waits for the upstream, and its answer's end for the usage write to Redis), promoted,
// then dead. V8's own growing factor (up to 4× the live size when its collector is fast) lets that garbage pile
// up: a replica with 20–40 MB live reached ~100 MB of old space, and its peak RSS followed. A fixed, smaller
// factor starts the (concurrent) mark-compact sooner, for more marking work: measured, 50% took peak RSS from
// ~237 to ~155–170 MB and cost ~12% more data-plane CPU per request at c=64 (docs/performance.md, "Memory:
// peak RSS under load"). So it is the operator's choice, off by default.
//
//   MODELGATE_HEAP_GROWING_PERCENT   the old generation's limit after a full collection, as a percentage above
//                                    what it left alive (V8's --heap-growing-percent); unset or 0: V8's own

/** The V8 flags the data plane sets for itself at start-up, from its environment; throws on a bad value. */
export function heapFlags(env: NodeJS.ProcessEnv = process.env): string[] {
  const raw = env.MODELGATE_HEAP_GROWING_PERCENT;
  const percent = raw === undefined || raw === "" ? 0 : Number(raw);
  if (!Number.isInteger(percent) || percent < 0 || percent > 1000)
    throw new Error(`MODELGATE_HEAP_GROWING_PERCENT must be an integer from 0 to 1000, not ${JSON.stringify(raw)}`);
  return percent === 0 ? [] : [`--heap-growing-percent=${percent}`];
}

/**
 * Applies heapFlags. V8 reads this flag at every full collection, so setting it after start-up takes effect
 * from the next one; the same flag given on the command line (`node --heap-growing-percent=…`) wins.
 */
export function applyHeapFlags(
  env: NodeJS.ProcessEnv = process.env,
  set: (flag: string) => void = setFlagsFromString,
  execArgv: readonly string[] = process.execArgv,
): string[] {
  const flags = heapFlags(env).filter((f) => !execArgv.some((a) => flagName(a) === flagName(f)));
  for (const f of flags) set(f);
  return flags;
}

const flagName = (arg: string) => arg.split("=")[0]!.replace(/_/g, "-");
