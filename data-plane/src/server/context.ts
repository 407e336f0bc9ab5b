import type { Logger } from "pino";
import type { SnapshotStore } from "../snapshot/store.ts";
import type { UpstreamTransport } from "../upstreams/transport.ts";
import type { UsageSink } from "../usage/sink.ts";

export interface DataPlaneOptions {
  store: SnapshotStore;
  usage: UsageSink;
  transport: UpstreamTransport;
  /** answers upstreams of protocol `demo` in-process */
  demo: UpstreamTransport;
  logger: Logger;
  /** decrypts upstream credentials from the snapshot */
  masterKey: Buffer;
  maxBodyBytes: number;
  /** the process is still starting or already draining */
  ready(): boolean;
}
