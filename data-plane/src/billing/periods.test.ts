import { describe, expect, it } from "vitest";
import { BudgetCalendar, isTimeZone, periodBounds } from "./periods.ts";

const iso = (t: number) => new Date(t).toISOString();
const at = (s: string) => Date.parse(s);

describe("budget periods", () => {
  it("are UTC days, ISO weeks and months by default", () => {
    const t = at("2026-11-25T13:45:00Z"); // a Wednesday
    expect(periodBounds("UTC", "day", t)).toEqual({
      start: at("2026-11-25T00:00:00Z"),
      end: at("2026-11-26T00:00:00Z"),
    });
    expect(periodBounds("UTC", "week", t)).toEqual({
      start: at("2026-11-23T00:00:00Z"),
      end: at("2026-11-30T00:00:00Z"),
    });
    expect(periodBounds("UTC", "month", t)).toEqual({
      start: at("2026-11-01T00:00:00Z"),
      end: at("2026-12-01T00:00:00Z"),
    });
  });

  it("start at local midnight in the account's time zone", () => {
    // 23:30 UTC on the 25th is already the 26th in Tokyo (UTC+9)
    const b = periodBounds("Asia/Tokyo", "day", at("2026-11-25T23:30:00Z"));
    expect(iso(b.start)).toBe("2026-11-25T15:00:00.000Z");
    expect(iso(b.end)).toBe("2026-11-26T15:00:00.000Z");
    // December crosses into the next year
    const m = periodBounds("America/New_York", "month", at("2026-12-15T12:00:00Z"));
    expect(iso(m.start)).toBe("2026-12-01T05:00:00.000Z");
    expect(iso(m.end)).toBe("2027-01-01T05:00:00.000Z");
  });

  it("follow daylight-saving changes (a 23-hour and a 25-hour day)", () => {
    const spring = periodBounds("Europe/Berlin", "day", at("2026-03-29T12:00:00Z"));
    expect(iso(spring.start)).toBe("2026-03-28T23:00:00.000Z");
    expect(iso(spring.end)).toBe("2026-03-29T22:00:00.000Z");
    const autumn = periodBounds("Europe/Berlin", "day", at("2026-10-25T12:00:00Z"));
    expect((autumn.end - autumn.start) / 3_600_000).toBe(25);
    // the week holding the spring change starts Monday 23 March, local midnight (UTC+1)
    expect(iso(periodBounds("Europe/Berlin", "week", at("2026-03-29T12:00:00Z")).start)).toBe(
      "2026-03-22T23:00:00.000Z",
    );
  });

  it("week starts on Monday even on a Sunday and a Monday", () => {
    expect(iso(periodBounds("UTC", "week", at("2026-11-29T23:59:59Z")).start)).toBe("2026-11-23T00:00:00.000Z");
    expect(iso(periodBounds("UTC", "week", at("2026-11-30T00:00:00Z")).start)).toBe("2026-11-30T00:00:00.000Z");
  });

  it("knows IANA zone names and refuses others", () => {
    expect(isTimeZone("UTC")).toBe(true);
    expect(isTimeZone("Europe/Berlin")).toBe(true);
    expect(isTimeZone("Mars/Olympus")).toBe(false);
    expect(isTimeZone("")).toBe(false);
  });

  it("the calendar follows its clock across a reset", () => {
    let now = at("2026-11-25T23:59:59Z");
    const cal = new BudgetCalendar(() => now);
    expect(iso(cal.bounds("UTC", "day").end)).toBe("2026-11-26T00:00:00.000Z");
    now += 1000;
    expect(iso(cal.bounds("UTC", "day").start)).toBe("2026-11-26T00:00:00.000Z");
  });
});
