-- Issue 26: the client parameters a translation left out (hints with no equivalent, hosted tools the upstream
-- cannot run), named on the answer's x-modelgate-dropped header and kept on the call's usage row. No index:
-- the column is shown and exported, not filtered on.
ALTER TABLE "usage_logs" ADD COLUMN "dropped" TEXT[] DEFAULT ARRAY[]::TEXT[];
