-- AlterTable
ALTER TABLE "accounts" ADD COLUMN     "spent_micro" BIGINT NOT NULL DEFAULT 0;
