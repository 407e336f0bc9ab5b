-- Where each policy feed in Redis stood (docs/distributed.md, "When Redis lost the feed"): the cursor (a
-- pg_snapshot's text) its head had reached, with its epoch and seq, recorded by the control plane after the
-- append (or full publication) that put it there succeeded, so it is never ahead of what the feed held. A
-- control plane that finds no feed in Redis, and never saw it itself (it restarted too), bridges from here.
-- `database` names the database the cursor belongs to (the cluster's system identifier and the database's oid):
-- a row copied into another database (a dump restored elsewhere) is not bridged from. One row per feed (the
-- head's Redis key), updated once per publication round.
CREATE TABLE "policy_feed_position" (
    "feed" TEXT NOT NULL,
    "cursor" TEXT NOT NULL,
    "epoch" TEXT NOT NULL,
    "seq" BIGINT NOT NULL,
    "database" TEXT NOT NULL,
    "recorded_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "policy_feed_position_pkey" PRIMARY KEY ("feed")
);
