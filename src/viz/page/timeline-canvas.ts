import type { VizAgent, VizCall, VizMarker, VizSegment } from '../viz-state-types.ts';
import { laneRuns, type LaneWindow } from './lane-columns.ts';

/*
 * The timeline as one canvas: a lane per agent with its states (aggregated per pixel column, never
 * dropped), its upstream calls as spans under them and its faults as markers above. Drawing costs the
 * same whatever the run's length; the DOM holds one element. Wheel zooms around the pointer, a drag pans,
 * a click picks the marker, call or state under it.
 */

/** What a click on the timeline found. */
export type TimelinePick =
  | { readonly kind: 'marker'; readonly agent: string; readonly at: number; readonly marker: VizMarker }
  | { readonly kind: 'call'; readonly agent: string; readonly at: number; readonly call: VizCall }
  | { readonly kind: 'segment'; readonly agent: string; readonly at: number; readonly segment: VizSegment };

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

export const LEFT = 120;
export const LANE = 30;
const TOP = 8;
const BAR = 14;

export interface TimelineInput {
  readonly agents: readonly VizAgent[];
  /** The whole run: first event → last event (or now, live). */
  readonly span: LaneWindow;
  /** The instant shown (the cursor). */
  readonly now: number;
  /**
   * Where the drawn history ends: open segments end here and nothing later is drawn. Replay: the run's
   * last event (the whole run, wherever the cursor is); live: now.
   */
  readonly end: number;
  /** Draw the cursor line (replay). */
  readonly cursor: boolean;
  /** How the axis writes a time. Default: UTC time of day. */
  readonly label?: (t: number) => string;
}

/** The timeline widget. */
export interface Timeline {
  draw(input: TimelineInput): void;
  /** The window shown, or `null` for the whole run. */
  window(): LaneWindow | null;
  fit(): void;
  /** Shows `[from, to]` (run clock). */
  zoomTo(from: number, to: number): void;
  /** Client coordinates of an agent's i-th marker (tests, keyboard). */
  markerPoint(agent: string, i: number): { x: number; y: number } | null;
  /** Where things are drawn, in canvas pixels (tests read the canvas with it). */
  geometry(): {
    left: number;
    plot: number;
    laneTop: Record<string, number>;
    bar: number;
    window: LaneWindow;
  };
}

export function createTimeline(
  canvas: HTMLCanvasElement,
  onPick: (pick: TimelinePick) => void,
  onChange: () => void,
): Timeline {
  let input: TimelineInput | null = null;
  let zoom: LaneWindow | null = null;
  const ctx = canvas.getContext('2d')!;

  const shown = (): LaneWindow => {
    if (!input) return { from: 0, to: 1 };
    const w = zoom ?? input.span;
    return w.to > w.from ? w : { from: w.from, to: w.from + 1 };
  };
  const plotWidth = () => Math.max(50, canvas.width - LEFT - 10);
  const xOf = (t: number, w: LaneWindow) => LEFT + ((t - w.from) / (w.to - w.from)) * plotWidth();
  const tOf = (x: number, w: LaneWindow) => w.from + ((x - LEFT) / plotWidth()) * (w.to - w.from);

  const draw = (next: TimelineInput) => {
    input = next;
    const width = Math.max(600, Math.floor(canvas.parentElement?.clientWidth ?? 900) - 4);
    const height = TOP + next.agents.length * LANE + 24;
    if (canvas.width !== width) canvas.width = width;
    if (canvas.height !== height) canvas.height = height;
    const w = shown();
    ctx.clearRect(0, 0, width, height);
    ctx.font = '12px system-ui, sans-serif';
    const plot = plotWidth();
    next.agents.forEach((a, i) => {
      const y = TOP + i * LANE;
      ctx.fillStyle = '#d8dee6';
      ctx.fillText(a.name, 4, y + 12);
      ctx.fillStyle = '#10151b';
      ctx.fillRect(LEFT, y, plot, BAR);
      for (const r of laneRuns(a.segments, w, plot, next.end)) {
        ctx.fillStyle = COLOURS[r.state] ?? '#bbb';
        ctx.fillRect(LEFT + r.x0, y, r.x1 - r.x0, BAR);
      }
      // Calls: one thin span each, red when it failed; those sharing a pixel are drawn once.
      let lastX = -1;
      let lastFault = false;
      for (const c of a.calls) {
        if (c.to < w.from || c.from > w.to || c.from > next.end) continue;
        const x0 = Math.floor(xOf(Math.max(c.from, w.from), w));
        const x1 = Math.max(x0 + 1, Math.ceil(xOf(Math.min(c.to, w.to, next.end), w)));
        const fault = c.outcome === 'fault';
        if (x1 <= lastX && (!fault || lastFault)) continue;
        ctx.fillStyle = fault ? '#ff5c5c' : '#8ab4f8';
        ctx.fillRect(x0, y + BAR + 2, x1 - x0, 5);
        lastX = x1;
        lastFault = fault;
      }
      let lastM = -10;
      for (const m of a.markers) {
        if (m.at < w.from || m.at > w.to || m.at > next.end) continue;
        const x = xOf(m.at, w);
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
      const x = Math.round(xOf(next.now, w)) + 0.5;
      ctx.moveTo(x, 0);
      ctx.lineTo(x, TOP + next.agents.length * LANE);
      ctx.stroke();
    }
    canvas.setAttribute('data-from', String(w.from));
    canvas.setAttribute('data-to', String(w.to));
    canvas.setAttribute('data-zoomed', zoom ? 'true' : 'false');
  };

  const pick = (clientX: number, clientY: number): TimelinePick | null => {
    if (!input) return null;
    const rect = canvas.getBoundingClientRect();
    const x = ((clientX - rect.left) * canvas.width) / rect.width;
    const y = ((clientY - rect.top) * canvas.height) / rect.height;
    const lane = Math.floor((y - TOP + 4) / LANE);
    const agent = input.agents[lane];
    // A marker at the run's first instant sits on the plot's left edge: half of it is left of it.
    if (!agent || x < LEFT - 6) return null;
    const w = shown();
    const t = tOf(x, w);
    const px = (w.to - w.from) / plotWidth();
    const visible = (at: number) => at <= input!.end;
    let best: VizMarker | undefined;
    for (const m of agent.markers)
      if (
        visible(m.at) &&
        Math.abs(m.at - t) <= 5 * px &&
        (!best || Math.abs(m.at - t) < Math.abs(best.at - t))
      )
        best = m;
    const yIn = y - (TOP + lane * LANE);
    if (best && yIn < BAR) return { kind: 'marker', agent: agent.name, at: best.at, marker: best };
    let call: VizCall | undefined;
    for (const c of agent.calls)
      if (visible(c.from) && c.from - 2 * px <= t && t <= c.to + 2 * px) {
        if (!call || c.outcome === 'fault') call = c;
      }
    if (call && (yIn >= BAR || !best)) return { kind: 'call', agent: agent.name, at: call.to, call };
    if (best) return { kind: 'marker', agent: agent.name, at: best.at, marker: best };
    const segment = agent.segments.find((s) => s.from <= t && (s.to ?? input!.end) >= t);
    return segment ? { kind: 'segment', agent: agent.name, at: Math.round(t), segment } : null;
  };

  let drag: { x: number; window: LaneWindow; moved: boolean } | null = null;
  canvas.addEventListener('mousedown', (e) => {
    drag = { x: e.clientX, window: shown(), moved: false };
  });
  window.addEventListener('mousemove', (e) => {
    if (!drag || !input) return;
    const dx = e.clientX - drag.x;
    if (Math.abs(dx) < 3 && !drag.moved) return;
    drag.moved = true;
    const rect = canvas.getBoundingClientRect();
    const dt = (-dx * (canvas.width / rect.width) * (drag.window.to - drag.window.from)) / plotWidth();
    zoom = { from: drag.window.from + dt, to: drag.window.to + dt };
    onChange();
  });
  window.addEventListener('mouseup', (e) => {
    const was = drag;
    drag = null;
    if (!was || was.moved) return;
    const found = pick(e.clientX, e.clientY);
    if (found) onPick(found);
  });
  canvas.addEventListener(
    'wheel',
    (e) => {
      if (!input) return;
      e.preventDefault();
      const rect = canvas.getBoundingClientRect();
      const w = shown();
      const t = tOf(((e.clientX - rect.left) * canvas.width) / rect.width, w);
      const f = e.deltaY > 0 ? 1.25 : 0.8;
      const from = t - (t - w.from) * f;
      const to = t + (w.to - t) * f;
      zoom = to - from >= input.span.to - input.span.from ? null : { from, to: Math.max(to, from + 10) };
      onChange();
    },
    { passive: false },
  );

  return {
    draw,
    window: () => zoom,
    fit() {
      zoom = null;
      onChange();
    },
    zoomTo(from, to) {
      zoom = to > from ? { from, to } : null;
      onChange();
    },
    markerPoint(agent, i) {
      if (!input) return null;
      const lane = input.agents.findIndex((a) => a.name === agent);
      const m = input.agents[lane]?.markers[i];
      if (!m) return null;
      const rect = canvas.getBoundingClientRect();
      const sx = rect.width / canvas.width;
      const sy = rect.height / canvas.height;
      return { x: rect.left + xOf(m.at, shown()) * sx, y: rect.top + (TOP + lane * LANE + 3) * sy };
    },
    geometry() {
      const laneTop: Record<string, number> = {};
      input?.agents.forEach((a, i) => {
        laneTop[a.name] = TOP + i * LANE;
      });
      return { left: LEFT, plot: plotWidth(), laneTop, bar: BAR, window: shown() };
    },
  };
}
