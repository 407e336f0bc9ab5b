-- Models tried in order when every route of a model fails before the first byte (docs/routing.md).
ALTER TABLE "models" ADD COLUMN "fallbacks" TEXT[] DEFAULT ARRAY[]::TEXT[];
