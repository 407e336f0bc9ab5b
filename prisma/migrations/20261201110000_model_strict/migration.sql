-- Issue 26: a model marked strict refuses (400) in a translation what would otherwise be dropped and named
-- (hints with no equivalent) or removed (hosted tools the upstream cannot run).
ALTER TABLE "models" ADD COLUMN "strict" BOOLEAN NOT NULL DEFAULT false;
