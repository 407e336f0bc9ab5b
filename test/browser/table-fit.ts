import type { Page } from "playwright-core";

/**
 * How a table sits in its card at the page's current width: the right edges of its last column and of the card,
 * and how far its wrapper scrolls sideways (0 when the whole table is in view).
 */
export async function tableFit(page: Page, testId: string) {
  return page.getByTestId(testId).evaluate((table) => {
    const card = table.closest(".card")!;
    const wrap = table.closest(".table-wrap")!;
    const last = table.querySelector("thead tr th:last-child")!;
    return {
      lastColumnRight: Math.round(last.getBoundingClientRect().right),
      cardRight: Math.round(card.getBoundingClientRect().right),
      hiddenSideways: wrap.scrollWidth - wrap.clientWidth,
    };
  });
}
