// Every Redis key and channel modelgate uses, under one prefix (MODELGATE_REDIS_PREFIX), so several
// deployments or test runs can share one Redis without seeing each other.

export interface RedisNames {
  snapshot: string;
  /** the published snapshot's version alone, so replicas can poll cheaply */
  snapshotVersion: string;
  snapshotChannel: string;
  snapshotSeq: string;
  changedChannel: string;
  /** the control plane's heartbeat (its clock and pid, refreshed every second, expiring): /readyz shows its age */
  controlHeartbeat: string;
  usageStream: string;
  prefix: string;
}

export const redisNames = (prefix = process.env.MODELGATE_REDIS_PREFIX ?? "modelgate:"): RedisNames => ({
  prefix,
  snapshot: `${prefix}snapshot:full`,
  snapshotVersion: `${prefix}snapshot:version-number`,
  snapshotChannel: `${prefix}snapshot:version`,
  snapshotSeq: `${prefix}snapshot:seq`,
  changedChannel: `${prefix}control:changed`,
  controlHeartbeat: `${prefix}control:heartbeat`,
  usageStream: `${prefix}usage`,
});
