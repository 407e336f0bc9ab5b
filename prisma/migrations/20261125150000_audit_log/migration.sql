-- The audit log: append-only, no foreign keys (a row outlives what it names).
CREATE TABLE "audit_logs" (
    "id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor_type" TEXT NOT NULL,
    "actor_user_id" UUID,
    "actor_email" TEXT,
    "actor_via" TEXT,
    "actor_address" TEXT,
    "action" TEXT NOT NULL,
    "account_id" UUID,
    "subject_type" TEXT NOT NULL,
    "subject_id" TEXT,
    "before" JSONB,
    "after" JSONB,

    CONSTRAINT "audit_logs_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "audit_logs_created_at_id_idx" ON "audit_logs"("created_at", "id");
CREATE INDEX "audit_logs_account_id_created_at_idx" ON "audit_logs"("account_id", "created_at");
CREATE INDEX "audit_logs_actor_user_id_created_at_idx" ON "audit_logs"("actor_user_id", "created_at");
CREATE INDEX "audit_logs_action_created_at_idx" ON "audit_logs"("action", "created_at");

-- Append-only, enforced by the database itself: no code path (nor a stray SQL session of the application's
-- role) can rewrite or remove history.
CREATE FUNCTION "audit_logs_refuse_change"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_logs is append-only: % refused', TG_OP;
END;
$$;
CREATE TRIGGER "audit_logs_append_only" BEFORE UPDATE OR DELETE ON "audit_logs"
  FOR EACH ROW EXECUTE FUNCTION "audit_logs_refuse_change"();
CREATE TRIGGER "audit_logs_no_truncate" BEFORE TRUNCATE ON "audit_logs"
  FOR EACH STATEMENT EXECUTE FUNCTION "audit_logs_refuse_change"();

-- Exports also carry the audit log; an operator's audit export spans every account (no account).
CREATE TYPE "ExportKind" AS ENUM ('usage', 'audit');
ALTER TABLE "exports" ADD COLUMN "kind" "ExportKind" NOT NULL DEFAULT 'usage';
ALTER TABLE "exports" ALTER COLUMN "account_id" DROP NOT NULL;
