import type { VizCall, VizMarker } from '../viz-state-types.ts';
import type { LaneWindow } from './lane-columns.ts';
import { BAR, LANE, LEFT, plotWidth, TOP, tOf } from './timeline-geometry.ts';
import type { TimelineInput, TimelinePick } from './timeline-types.ts';

/**
 * What is drawn under a click at client `(clientX, clientY)`: a fault marker (on the state bar), a call
 * (under it), else the state segment; `null` off the lanes.
 */
export function pickAt(
  canvas: HTMLCanvasElement,
  input: TimelineInput,
  w: LaneWindow,
  clientX: number,
  clientY: number,
): TimelinePick | null {
  const rect = canvas.getBoundingClientRect();
  const x = ((clientX - rect.left) * canvas.width) / rect.width;
  const y = ((clientY - rect.top) * canvas.height) / rect.height;
  const lane = Math.floor((y - TOP + 4) / LANE);
  const agent = input.agents[lane];
  // A marker at the run's first instant sits on the plot's left edge: half of it is left of it.
  if (!agent || x < LEFT - 6) return null;
  const t = tOf(canvas, x, w);
  const px = (w.to - w.from) / plotWidth(canvas);
  const visible = (at: number) => at <= input.end;
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
  const segment = agent.segments.find((s) => s.from <= t && (s.to ?? input.end) >= t);
  return segment ? { kind: 'segment', agent: agent.name, at: Math.round(t), segment } : null;
}
