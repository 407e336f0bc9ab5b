import type { Page } from "playwright-core";
import { expect } from "vitest";

/**
 * Asserts that a table fits its card at the page's current width: its last column ends inside the card and its
 * wrapper does not scroll sideways (no column hidden behind a scroll).
 */
export async function expectTableFits(page: Page, testId: string) {
  const fit = await page.getByTestId(testId).evaluate((table) => {
    const card = table.closest(".card")!;
    const wrap = table.closest(".table-wrap")!;
    const last = table.querySelector("thead tr th:last-child")!;
    return {
      lastColumnRight: Math.round(last.getBoundingClientRect().right),
      cardRight: Math.round(card.getBoundingClientRect().right),
      hiddenSideways: wrap.scrollWidth - wrap.clientWidth,
    };
  });
  expect(fit.lastColumnRight, `${testId}: last column`).toBeLessThanOrEqual(fit.cardRight);
  expect(fit.hiddenSideways, `${testId}: hidden behind a sideways scroll`).toBeLessThanOrEqual(0);
}
