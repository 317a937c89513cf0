/** ISO 8601 UTC with millisecond precision and a trailing Z (docs/decisions.md#time). */
export function iso(value: Date | string | number): string {
  return new Date(value).toISOString();
}

export function isoOrNull(value: Date | string | number | null | undefined): string | null {
  return value === null || value === undefined ? null : iso(value);
}

export function isoDate(value: Date | string | number): string {
  return iso(value).slice(0, 10);
}
