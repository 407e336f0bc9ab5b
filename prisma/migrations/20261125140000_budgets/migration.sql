-- Budgets (issue 16): spend limits per calendar period in the account's time zone, per account and per key.

-- CreateEnum
CREATE TYPE "BudgetPeriod" AS ENUM ('day', 'week', 'month');

-- AlterTable
ALTER TABLE "accounts" ADD COLUMN "time_zone" TEXT NOT NULL DEFAULT 'UTC',
ADD COLUMN "budget_day_micro" BIGINT,
ADD COLUMN "budget_week_micro" BIGINT,
ADD COLUMN "budget_month_micro" BIGINT,
ADD COLUMN "budget_day_cap_micro" BIGINT,
ADD COLUMN "budget_week_cap_micro" BIGINT,
ADD COLUMN "budget_month_cap_micro" BIGINT;

-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN "budget_day_micro" BIGINT,
ADD COLUMN "budget_week_micro" BIGINT,
ADD COLUMN "budget_month_micro" BIGINT;

-- CreateTable
CREATE TABLE "spend_periods" (
    "account_id" UUID NOT NULL,
    "key_id" TEXT NOT NULL DEFAULT '',
    "period" "BudgetPeriod" NOT NULL,
    "period_start" TIMESTAMPTZ(3) NOT NULL,
    "spent_micro" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "spend_periods_pkey" PRIMARY KEY ("account_id","key_id","period","period_start")
);

-- AddForeignKey
ALTER TABLE "spend_periods" ADD CONSTRAINT "spend_periods_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;
