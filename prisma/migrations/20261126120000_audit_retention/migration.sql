-- Audit log retention (MODELGATE_AUDIT_RETENTION_DAYS) is the audit log's only deletion. The append-only
-- trigger lets a DELETE through only for rows older than the cutoff the pruning transaction names in
-- `modelgate.audit_prune_before` (set with is_local = true: it ends with that transaction, which also writes the
-- `audit.prune` row recording what went). UPDATE and TRUNCATE stay refused, as does deleting anything newer.
CREATE OR REPLACE FUNCTION "audit_logs_refuse_change"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  cutoff text;
BEGIN
  IF TG_OP = 'DELETE' THEN
    cutoff := current_setting('modelgate.audit_prune_before', true);
    IF cutoff IS NOT NULL AND cutoff <> '' AND OLD."created_at" < cutoff::timestamptz THEN
      RETURN OLD;
    END IF;
  END IF;
  RAISE EXCEPTION 'audit_logs is append-only: % refused', TG_OP;
END;
$$;
