import { BudgetCalendar, budgetClockFromEnv } from "@modelgate/data-plane";

/**
 * The control plane's budget calendar: which period a settled call lands in, which period the snapshot
 * publishes, when alerts' periods turn over. Its clock is the wall clock, or the test clock
 * (MODELGATE_TEST_CLOCK_FILE) the data planes of a test gateway share.
 */
export const controlCalendar = new BudgetCalendar(budgetClockFromEnv());
