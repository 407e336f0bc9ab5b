import type { KeyStateLink } from "./upstream-keys.ts";
import type { AuditActor } from "../audit/record.ts";
import type { Db } from "../db/client.ts";
import type { CopyOut } from "../db/copy-out.ts";

/** What every control-plane service needs: the database and a way to say "the snapshot is stale". */
export interface ServiceContext {
  prisma: Db;
  /** Schedules a snapshot publication; cheap to call after every write. */
  snapshotChanged(): void;
  /**
   * Resolves once every change scheduled so far is published (in embedded mode: in the data plane's own
   * store, so a key just created answers at once). Absent where nothing publishes (tests of services).
   */
  policyPublished?(): Promise<void>;
  /** Postgres only: streams a COPY … TO STDOUT (exports write through it; absent, they read in batches) */
  copyOut?: CopyOut;
  /** Master key for upstream credentials and TOTP secrets (AES-256-GCM). */
  masterKey: Buffer;
  /** who acts, for the audit log (absent: the system itself) */
  actor?: AuditActor;
  /** the data planes' pooled upstream key states (absent: none to see, e.g. tests of services) */
  keyStates?: KeyStateLink;
}
