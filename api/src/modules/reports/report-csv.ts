/**
 * Rows as RFC 4180 CSV: a header line of the first row's keys, then one line per row, CRLF after
 * each; a field holding a comma, a double quote, CR or LF is quoted, its quotes doubled.
 */
export function toCsv(rows: readonly Record<string, string | number>[]): string {
  const columns = Object.keys(rows[0] ?? {});
  const lines = [columns, ...rows.map((row) => columns.map((column) => String(row[column] ?? "")))];
  return lines.map((fields) => `${fields.map(csvField).join(",")}\r\n`).join("");
}

function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}
