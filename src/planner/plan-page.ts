import { formatClock } from '../clock/zoned-time.ts';
import { formatMove } from './format-plan.ts';
import type { DemandSummary, PlanResult } from './plan-types.ts';

/**
 * `breakwater plan --html`: one self-contained page (inline SVG, CSS and a few lines of JS; nothing
 * fetched) with, for every limit, the per-minute demand before and after the proposal against it.
 */

const W = 900;
const H = 180;
const PAD = { left: 44, right: 12, top: 12, bottom: 24 };

const esc = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

interface Chart {
  readonly id: string;
  readonly title: string;
  readonly unit: string;
  readonly limit: number;
  readonly before: readonly number[];
  readonly after: readonly number[];
}

/** Calls in the 60 minutes up to and including each minute (what an hourly budget sees at that minute). */
function trailingHour(perMinute: readonly number[]): number[] {
  const out: number[] = [];
  let sum = 0;
  perMinute.forEach((v, i) => {
    sum += v - (i >= 60 ? perMinute[i - 60]! : 0);
    out.push(sum);
  });
  return out;
}

function charts(before: DemandSummary, after: DemandSummary): Chart[] {
  const out: Chart[] = [];
  before.endpoints.forEach((e, i) => {
    const a = after.endpoints[i]!;
    if (e.rpm !== null)
      out.push({
        id: `rpm-${e.id}`,
        title: `${e.id} (${e.model}): calls per minute`,
        unit: 'RPM',
        limit: e.rpm,
        before: e.calls,
        after: a.calls,
      });
    if (e.tpm !== null)
      out.push({
        id: `tpm-${e.id}`,
        title: `${e.id} (${e.model}): tokens per minute`,
        unit: 'TPM',
        limit: e.tpm,
        before: e.tokens,
        after: a.tokens,
      });
  });
  if (before.concurrency.limit !== null)
    out.push({
      id: 'concurrency',
      title: 'concurrency tokens: calls in flight on average per minute',
      unit: 'tokens',
      limit: before.concurrency.limit,
      before: before.concurrency.occupancy,
      after: after.concurrency.occupancy,
    });
  before.budgets.forEach((b, i) => {
    out.push({
      id: `budget-${b.match}`,
      title: `${b.name}: calls in the last 60 minutes`,
      unit: 'per hour',
      limit: b.limit,
      before: trailingHour(b.perMinute),
      after: trailingHour(after.budgets[i]!.perMinute),
    });
  });
  return out;
}

function steps(values: readonly number[], x: (i: number) => number, y: (v: number) => number): string {
  const pts: string[] = [];
  values.forEach((v, i) => {
    pts.push(`${x(i).toFixed(1)},${y(v).toFixed(1)}`, `${x(i + 1).toFixed(1)},${y(v).toFixed(1)}`);
  });
  return pts.join(' ');
}

function svg(chart: Chart, minutes: readonly number[], zone: string): string {
  const n = Math.max(1, minutes.length);
  const top = Math.max(chart.limit, ...chart.before, ...chart.after) * 1.1 || 1;
  const x = (i: number) => PAD.left + (i / n) * (W - PAD.left - PAD.right);
  const y = (v: number) => H - PAD.bottom - (v / top) * (H - PAD.top - PAD.bottom);
  const ticks: string[] = [];
  minutes.forEach((t, i) => {
    if (formatClock(t, zone).endsWith(':00') || formatClock(t, zone).endsWith(':30'))
      ticks.push(
        `<line x1="${x(i)}" x2="${x(i)}" y1="${PAD.top}" y2="${H - PAD.bottom}" class="grid"/><text x="${x(i)}" y="${H - 6}" class="tick">${formatClock(t, zone)}</text>`,
      );
  });
  const over = chart.before.map((v, i) => (v > chart.limit ? i : -1)).filter((i) => i >= 0);
  return `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(chart.title)}" data-testid="chart-svg">
${ticks.join('\n')}
${over.map((i) => `<rect x="${x(i)}" width="${Math.max(1, x(i + 1) - x(i))}" y="${PAD.top}" height="${H - PAD.top - PAD.bottom}" class="over" data-testid="over-minute"/>`).join('')}
<polyline points="${steps(chart.before, x, y)}" class="before" data-testid="series-before"/>
<polyline points="${steps(chart.after, x, y)}" class="after" data-testid="series-after"/>
<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(chart.limit)}" y2="${y(chart.limit)}" class="limit" data-testid="limit-line" data-limit="${chart.limit}"/>
<text x="${PAD.left - 4}" y="${y(chart.limit) + 4}" class="axis">${chart.limit}</text>
${y(chart.limit) - PAD.top > 14 ? `<text x="${PAD.left - 4}" y="${PAD.top + 8}" class="axis">${Math.round(top)}</text>` : ''}
</svg>`;
}

/**
 * The plan as one self-contained HTML page: the verdict before and after, the peak and the moves, and a
 * chart per limit (RPM and TPM per endpoint, the concurrency tokens, each hourly budget) with the
 * per-minute demand before (red) and after (blue) the proposal against the limit (dashed). No outside
 * resources: it opens from disk, offline.
 *
 * @example
 * ```ts
 * writeFileSync('plan.html', planPage(planSchedule(spec), 'morning-peak-before-fixes'));
 * ```
 */
export function planPage(plan: PlanResult, name: string): string {
  const zone = plan.window.timezone;
  const list = charts(plan.before, plan.after);
  const peak = plan.before.peak;
  const verdict = (d: DemandSummary) => (d.fits ? 'fits every limit' : `over ${d.breaches.length} limit(s)`);
  const sections = list
    .map(
      (c) => `<section class="chart" data-testid="chart" data-chart="${esc(c.id)}">
<h2>${esc(c.title)} <small>limit ${c.limit} ${esc(c.unit)}</small></h2>
${svg(c, plan.before.minutes, zone)}
</section>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<title>breakwater plan: ${esc(name)}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:960px}
h1{font-size:20px}h2{font-size:15px;margin:18px 0 4px}small{color:#666;font-weight:normal}
.before{fill:none;stroke:#d43;stroke-width:1.5}.after{fill:none;stroke:#26c;stroke-width:1.5}
.limit{stroke:#111;stroke-dasharray:6 4;stroke-width:1.2}.grid{stroke:#eee}.over{fill:#fdd}
.tick{font-size:10px;text-anchor:middle;fill:#666}.axis{font-size:10px;text-anchor:end;fill:#444}
.hide-before .before,.hide-after .after{display:none}
code{background:#f4f4f4;padding:1px 4px}
</style></head>
<body>
<h1>breakwater plan: ${esc(name)}</h1>
<p data-testid="verdict">before: <b data-testid="verdict-before">${verdict(plan.before)}</b>; after ${plan.proposal.moves.length} move(s): <b data-testid="verdict-after">${verdict(plan.after)}</b>. Predicted fallbacks ${plan.before.spilled} → ${plan.after.spilled} of ${plan.before.calls} calls.</p>
${peak ? `<p data-testid="peak">peak <b>${esc(peak.label)}</b> ${esc(zone)}: ${peak.calls} LLM calls from ${peak.jobs.length} jobs${peak.budgets.map((b) => `; breaks ${esc(b.name)} (${b.calls} &gt; ${b.limit})`).join('')}.</p>` : ''}
<ul data-testid="moves">${plan.proposal.moves.map((m) => `<li><code>${esc(formatMove(m))}</code></li>`).join('')}</ul>
<p><label><input type="checkbox" id="show-before" checked> before <span style="color:#d43">━</span></label>
<label><input type="checkbox" id="show-after" checked> after <span style="color:#26c">━</span></label>
limit <span>┅</span>; shaded: minutes over the limit before.</p>
${sections}
<script>
for (const which of ['before', 'after']) {
  document.getElementById('show-' + which).addEventListener('change', (e) => {
    document.body.classList.toggle('hide-' + which, !e.target.checked);
  });
}
</script>
</body></html>
`;
}
