/** Calendar quarters in UTC, named `YYYY-Qn` (the Report's `period`). */
export interface Quarter {
  label: string;
  year: number;
  quarter: 1 | 2 | 3 | 4;
  /** First instant of the quarter (inclusive). */
  startsAt: Date;
  /** First instant of the next quarter (exclusive). */
  endsAt: Date;
}

/** What a label looks like (also the OpenAPI pattern of `period`). */
export const QUARTER_PATTERN = "^\\d{4}-Q[1-4]$";
const LABEL = /^(\d{4})-Q([1-4])$/;

/** The earliest year a label may name: timestamps start there. */
export const FIRST_YEAR = 1970;

export function quarterAt(year: number, quarter: 1 | 2 | 3 | 4): Quarter {
  return {
    label: `${String(year).padStart(4, "0")}-Q${quarter}`,
    year,
    quarter,
    startsAt: utcMonthStart(year, (quarter - 1) * 3),
    endsAt: utcMonthStart(year, quarter * 3),
  };
}

/** The quarter `label` names, or null when it is not `YYYY-Qn` with n in 1..4. */
export function parseQuarter(label: string): Quarter | null {
  const match = LABEL.exec(label);
  if (!match) return null;
  return quarterAt(Number(match[1]), Number(match[2]) as Quarter["quarter"]);
}

export function quarterOf(instant: Date): Quarter {
  return quarterAt(instant.getUTCFullYear(), (Math.floor(instant.getUTCMonth() / 3) + 1) as Quarter["quarter"]);
}

/** The quarter `offset` quarters after (negative: before) `q`. */
export function shiftQuarter(q: Quarter, offset: number): Quarter {
  const index = q.year * 4 + (q.quarter - 1) + offset;
  return quarterAt(Math.floor(index / 4), ((index % 4) + 1) as Quarter["quarter"]);
}

/** `count` quarters ending with `q`, oldest first. */
export function quartersEndingWith(q: Quarter, count: number): Quarter[] {
  return Array.from({ length: count }, (_, i) => shiftQuarter(q, i - count + 1));
}

// setUTCFullYear, not Date.UTC: Date.UTC reads years 0..99 as 1900..1999.
function utcMonthStart(year: number, month: number): Date {
  const date = new Date(0);
  date.setUTCFullYear(year, month, 1);
  return date;
}
