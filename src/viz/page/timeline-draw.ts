import type { VizAgent } from '../viz-state-types.ts';
import { laneRuns, type LaneWindow } from './lane-columns.ts';
import { BAR, LANE, LEFT, plotWidth, shownWindow, TOP, xOf } from './timeline-geometry.ts';
import type { TimelineInput } from './timeline-types.ts';

/** Colours of the states (as the cards' pills). */
const COLOURS: Readonly<Record<string, string>> = {
  idle: '#6b7785',
  queued: '#8a6bd1',
  calling: '#2fa65a',
  fallback: '#1f9e9a',
  tools: '#3b82d6',
  cooling: '#e39b24',
  degraded: '#d6453b',
  stopped: '#444c56',
};

/** Draws the whole timeline on `canvas` (sized to its parent): the lanes, the axis and the cursor. */
export function drawTimeline(
  canvas: HTMLCanvasElement,
  ctx: CanvasRenderingContext2D,
  next: TimelineInput,
  zoom: LaneWindow | null,
): void {
  const width = Math.max(600, Math.floor(canvas.parentElement?.clientWidth ?? 900) - 4);
  const height = TOP + next.agents.length * LANE + 24;
  if (canvas.width !== width) canvas.width = width;
  if (canvas.height !== height) canvas.height = height;
  const w = shownWindow(next, zoom);
  ctx.clearRect(0, 0, width, height);
  ctx.font = '12px system-ui, sans-serif';
  const plot = plotWidth(canvas);
  next.agents.forEach((a, i) => {
    drawLane(canvas, ctx, a, TOP + i * LANE, w, plot, next.end);
  });
  const axisY = TOP + next.agents.length * LANE + 14;
  ctx.fillStyle = '#7d8896';
  const label = next.label ?? ((t: number) => new Date(t).toISOString().slice(11, 23));
  ctx.fillText(label(w.from), LEFT, axisY);
  const endLabel = label(w.to);
  ctx.fillText(endLabel, width - 10 - ctx.measureText(endLabel).width, axisY);
  if (next.cursor && next.now >= w.from && next.now <= w.to) {
    ctx.strokeStyle = '#ffffff';
    ctx.beginPath();
    const x = Math.round(xOf(canvas, next.now, w)) + 0.5;
    ctx.moveTo(x, 0);
    ctx.lineTo(x, TOP + next.agents.length * LANE);
    ctx.stroke();
  }
  canvas.setAttribute('data-from', String(w.from));
  canvas.setAttribute('data-to', String(w.to));
  canvas.setAttribute('data-zoomed', zoom ? 'true' : 'false');
}

/** One agent's lane at `y`: its name, its states, its calls under them and its faults above. */
function drawLane(
  canvas: HTMLCanvasElement,
  ctx: CanvasRenderingContext2D,
  a: VizAgent,
  y: number,
  w: LaneWindow,
  plot: number,
  end: number,
): void {
  ctx.fillStyle = '#d8dee6';
  ctx.fillText(a.name, 4, y + 12);
  ctx.fillStyle = '#10151b';
  ctx.fillRect(LEFT, y, plot, BAR);
  for (const r of laneRuns(a.segments, w, plot, end)) {
    ctx.fillStyle = COLOURS[r.state] ?? '#bbb';
    ctx.fillRect(LEFT + r.x0, y, r.x1 - r.x0, BAR);
  }
  // Calls: one thin span each, red when it failed; those sharing a pixel are drawn once.
  let lastX = -1;
  let lastFault = false;
  for (const c of a.calls) {
    if (c.to < w.from || c.from > w.to || c.from > end) continue;
    const x0 = Math.floor(xOf(canvas, Math.max(c.from, w.from), w));
    const x1 = Math.max(x0 + 1, Math.ceil(xOf(canvas, Math.min(c.to, w.to, end), w)));
    const fault = c.outcome === 'fault';
    if (x1 <= lastX && (!fault || lastFault)) continue;
    ctx.fillStyle = fault ? '#ff5c5c' : '#8ab4f8';
    ctx.fillRect(x0, y + BAR + 2, x1 - x0, 5);
    lastX = x1;
    lastFault = fault;
  }
  let lastM = -10;
  for (const m of a.markers) {
    if (m.at < w.from || m.at > w.to || m.at > end) continue;
    const x = xOf(canvas, m.at, w);
    if (x - lastM < 3) continue;
    lastM = x;
    ctx.fillStyle = m.rateLimited ? '#ff5c5c' : '#c792ea';
    ctx.beginPath();
    ctx.moveTo(x - 4, y - 2);
    ctx.lineTo(x + 4, y - 2);
    ctx.lineTo(x, y + 6);
    ctx.closePath();
    ctx.fill();
  }
}
