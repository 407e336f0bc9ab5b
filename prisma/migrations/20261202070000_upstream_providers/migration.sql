-- Providers beside protocols (docs/providers.md): who serves an upstream, its non-secret settings and its
-- other sealed secrets. An upstream of a provider that implies the protocol per model has none of its own.
ALTER TABLE "upstreams"
  ADD COLUMN "provider" TEXT NOT NULL DEFAULT 'direct',
  ADD COLUMN "options" JSONB NOT NULL DEFAULT '{}',
  ADD COLUMN "secrets_enc" TEXT,
  ALTER COLUMN "protocol" DROP NOT NULL;
