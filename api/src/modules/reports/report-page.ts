import { escapeHtml } from "../../lib/html.ts";
import type { Quarter } from "./quarters.ts";
import { FIGURE_NOTES, type QuarterReport } from "./report-figures.ts";

export interface ReportPageFacts {
  /** The quarters of the chart, oldest first; the last is the page's. */
  history: QuarterReport[];
  previous: Quarter | null;
  /** Null while the page's quarter is the current one. */
  next: Quarter | null;
}

const usd = new Intl.NumberFormat("en-US", { style: "currency", currency: "USD" });
const whole = new Intl.NumberFormat("en-US");
const day = new Intl.DateTimeFormat("en-GB", { timeZone: "UTC", day: "numeric", month: "long", year: "numeric" });

const formatUsd = (cents: bigint) => usd.format(Number(cents) / 100);

/**
 * The admins' report page: the quarter's figures and bar charts of the last four quarters, as inline
 * SVG. No scripts, every value escaped; served under the verification page's Content-Security-Policy.
 */
export function renderReportPage(facts: ReportPageFacts): string {
  const report = facts.history.at(-1)!;
  const { period } = report;
  const inProgress = facts.next === null;
  const figures: [id: string, label: string, value: string, raw: string, note: string][] = [
    ["new-users", "New users", whole.format(report.newUsers), String(report.newUsers), FIGURE_NOTES.new_users],
    ["artworks-certified", "Artworks certified", whole.format(report.artworksCertified), String(report.artworksCertified), FIGURE_NOTES.artworks_certified],
    ["total-volume", "Total volume", formatUsd(report.volumeCents), (Number(report.volumeCents) / 100).toFixed(2), FIGURE_NOTES.total_volume_usd],
    ["active-disputes", "Active disputes", whole.format(report.activeDisputes), String(report.activeDisputes), FIGURE_NOTES.active_disputes],
    ["challenges-completed", "Challenges completed", whole.format(report.challengesCompleted), String(report.challengesCompleted), FIGURE_NOTES.challenges_completed],
  ];
  const link = (q: Quarter, text: string, id: string) => `<a id="${id}" href="?period=${escapeHtml(encodeURIComponent(q.label))}">${escapeHtml(text)}</a>`;
  const nav = [facts.previous ? link(facts.previous, `← ${facts.previous.label}`, "previous") : "", facts.next ? link(facts.next, `${facts.next.label} →`, "next") : ""]
    .filter(Boolean)
    .join(" ");

  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="robots" content="noindex">
  <title>${escapeHtml(`Report ${period.label}`)}</title>
  <style>
    body { font: 15px/1.5 system-ui, sans-serif; max-width: 64rem; margin: 2rem auto; padding: 0 1rem; color: #1a1a1a; }
    nav a { margin-right: 1rem; }
    .figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(11rem, 1fr)); gap: 1rem; margin: 1.5rem 0; padding: 0; }
    .figure { background: #f6f6f6; padding: .75rem 1rem; border-radius: 4px; }
    .figure dt { color: #444; font-weight: 600; }
    .figure dd { margin: 0; font-size: 1.8rem; font-variant-numeric: tabular-nums; }
    .figure p { margin: .25rem 0 0; color: #555; font-size: .85rem; }
    .charts { display: flex; flex-wrap: wrap; gap: 2rem; }
    figure { margin: 0; }
    figcaption { font-weight: 600; }
    svg { max-width: 100%; height: auto; }
    svg text { font: 12px system-ui, sans-serif; fill: #333; }
    .bar { fill: #8fb3d9; }
    .bar.current { fill: #1f5fa8; }
    .axis { stroke: #999; }
    table { border-collapse: collapse; margin-top: 1.5rem; }
    th, td { padding: .3rem .9rem .3rem 0; text-align: right; font-variant-numeric: tabular-nums; }
    th:first-child, td:first-child { text-align: left; }
    .note { color: #8a6d00; }
  </style>
</head>
<body>
  <h1>Admin report <span id="period">${escapeHtml(period.label)}</span></h1>
  <p>${escapeHtml(day.format(period.startsAt))} to ${escapeHtml(day.format(new Date(period.endsAt.getTime() - 1)))} (UTC); generated
    <time id="generated-at" datetime="${escapeHtml(report.generatedAt.toISOString())}">${escapeHtml(report.generatedAt.toISOString())}</time>.</p>
  ${inProgress ? `<p class="note" id="in-progress">The quarter is in progress: its figures count up to the time of generation.</p>` : ""}
  <nav>${nav}</nav>
  <dl class="figures">
${figures.map(([id, label, value, raw, note]) => `    <div class="figure"><dt>${escapeHtml(label)}</dt><dd id="${id}" data-value="${escapeHtml(raw)}">${escapeHtml(value)}</dd><p>${escapeHtml(note)}</p></div>`).join("\n")}
  </dl>
  <h2>Last ${escapeHtml(facts.history.length)} quarters</h2>
  <div class="charts">
    ${barChart("volume-chart", "Total volume (USD)", facts.history.map((r) => ({ quarter: r.period, value: Number(r.volumeCents), text: formatUsd(r.volumeCents) })), period)}
    ${barChart("users-chart", "New users", facts.history.map((r) => ({ quarter: r.period, value: r.newUsers, text: whole.format(r.newUsers) })), period)}
  </div>
  <table id="history">
    <thead><tr><th scope="col">Quarter</th><th scope="col">New users</th><th scope="col">Artworks certified</th><th scope="col">Total volume</th><th scope="col">Challenges completed</th></tr></thead>
    <tbody>
${facts.history
  .map(
    (r) =>
      `      <tr><td>${r.period.label === period.label ? escapeHtml(r.period.label) : link(r.period, r.period.label, `history-${r.period.label}`)}</td><td>${escapeHtml(whole.format(r.newUsers))}</td><td>${escapeHtml(whole.format(r.artworksCertified))}</td><td>${escapeHtml(formatUsd(r.volumeCents))}</td><td>${escapeHtml(whole.format(r.challengesCompleted))}</td></tr>`,
  )
  .join("\n")}
    </tbody>
  </table>
</body>
</html>
`;
}

const CHART = { width: 460, height: 240, top: 28, plot: 170, slot: 115, bar: 56 };

/** A bar per quarter, heights relative to the largest value; the page's quarter stands out. */
function barChart(id: string, title: string, bars: { quarter: Quarter; value: number; text: string }[], current: Quarter): string {
  const max = Math.max(0, ...bars.map((b) => b.value));
  const baseline = CHART.top + CHART.plot;
  const shapes = bars.map((b, i) => {
    // A value above zero stays visible however small next to the largest.
    const height = max === 0 ? 0 : Math.max(b.value > 0 ? 2 : 0, Math.round((b.value / max) * CHART.plot));
    const x = i * CHART.slot + (CHART.slot - CHART.bar) / 2;
    const middle = i * CHART.slot + CHART.slot / 2;
    const label = `${b.quarter.label}: ${b.text}`;
    return [
      `<rect class="bar${b.quarter.label === current.label ? " current" : ""}" data-period="${escapeHtml(b.quarter.label)}" data-value="${escapeHtml(b.value)}" x="${x}" y="${baseline - height}" width="${CHART.bar}" height="${height}"><title>${escapeHtml(label)}</title></rect>`,
      `<text x="${middle}" y="${baseline - height - 6}" text-anchor="middle">${escapeHtml(b.text)}</text>`,
      `<text x="${middle}" y="${baseline + 20}" text-anchor="middle">${escapeHtml(b.quarter.label)}</text>`,
    ].join("");
  });
  return `<figure>
      <figcaption>${escapeHtml(title)}</figcaption>
      <svg id="${id}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${CHART.width} ${CHART.height}" width="${CHART.width}" height="${CHART.height}" role="img" aria-label="${escapeHtml(`${title}, ${bars.map((b) => `${b.quarter.label} ${b.text}`).join("; ")}`)}">
        <line class="axis" x1="0" y1="${baseline}" x2="${CHART.width}" y2="${baseline}"/>
        ${shapes.join("\n        ")}
      </svg>
    </figure>`;
}
