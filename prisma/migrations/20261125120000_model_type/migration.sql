-- A model is a chat model (the default, every existing one) or an embedding model.
CREATE TYPE "ModelType" AS ENUM ('chat', 'embedding');

ALTER TABLE "models" ADD COLUMN "type" "ModelType" NOT NULL DEFAULT 'chat';
