import type { LaneWindow } from './lane-columns.ts';
import { drawTimeline } from './timeline-draw.ts';
import { BAR, LANE, LEFT, plotWidth, shownWindow, TOP, tOf, xOf } from './timeline-geometry.ts';
import { pickAt } from './timeline-pick.ts';
import type { Timeline, TimelineInput, TimelinePick } from './timeline-types.ts';

/*
 * The timeline as one canvas: a lane per agent with its states (aggregated per pixel column, never
 * dropped), its upstream calls as spans under them and its faults as markers above. Drawing costs the
 * same whatever the run's length; the DOM holds one element. Wheel zooms around the pointer, a drag pans,
 * a click picks the marker, call or state under it.
 */

export function createTimeline(
  canvas: HTMLCanvasElement,
  onPick: (pick: TimelinePick) => void,
  onChange: () => void,
): Timeline {
  let input: TimelineInput | null = null;
  let zoom: LaneWindow | null = null;
  const ctx = canvas.getContext('2d')!;
  const shown = (): LaneWindow => shownWindow(input, zoom);

  listenForPointer(canvas, {
    shown,
    input: () => input,
    zoom: (next) => {
      zoom = next;
      onChange();
    },
    pick: (clientX, clientY) => (input ? pickAt(canvas, input, shown(), clientX, clientY) : null),
    onPick,
  });

  return {
    draw(next) {
      input = next;
      drawTimeline(canvas, ctx, next, zoom);
    },
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
      return { x: rect.left + xOf(canvas, m.at, shown()) * sx, y: rect.top + (TOP + lane * LANE + 3) * sy };
    },
    geometry() {
      const laneTop: Record<string, number> = {};
      input?.agents.forEach((a, i) => {
        laneTop[a.name] = TOP + i * LANE;
      });
      return { left: LEFT, plot: plotWidth(canvas), laneTop, bar: BAR, window: shown() };
    },
  };
}

/** What the pointer handlers read and change of a timeline. */
interface PointerTarget {
  shown(): LaneWindow;
  input(): TimelineInput | null;
  /** Shows `next` (`null`: the whole run) and says the view changed. */
  zoom(next: LaneWindow | null): void;
  pick(clientX: number, clientY: number): TimelinePick | null;
  onPick(pick: TimelinePick): void;
}

/** A drag pans, a click (a press and release without a drag) picks, the wheel zooms around the pointer. */
function listenForPointer(canvas: HTMLCanvasElement, target: PointerTarget): void {
  let drag: { x: number; window: LaneWindow; moved: boolean } | null = null;
  canvas.addEventListener('mousedown', (e) => {
    drag = { x: e.clientX, window: target.shown(), moved: false };
  });
  window.addEventListener('mousemove', (e) => {
    if (!drag || !target.input()) return;
    const dx = e.clientX - drag.x;
    if (Math.abs(dx) < 3 && !drag.moved) return;
    drag.moved = true;
    const rect = canvas.getBoundingClientRect();
    const dt = (-dx * (canvas.width / rect.width) * (drag.window.to - drag.window.from)) / plotWidth(canvas);
    target.zoom({ from: drag.window.from + dt, to: drag.window.to + dt });
  });
  window.addEventListener('mouseup', (e) => {
    const was = drag;
    drag = null;
    if (!was || was.moved) return;
    const found = target.pick(e.clientX, e.clientY);
    if (found) target.onPick(found);
  });
  canvas.addEventListener(
    'wheel',
    (e) => {
      const input = target.input();
      if (!input) return;
      e.preventDefault();
      const rect = canvas.getBoundingClientRect();
      const w = target.shown();
      const t = tOf(canvas, ((e.clientX - rect.left) * canvas.width) / rect.width, w);
      const f = e.deltaY > 0 ? 1.25 : 0.8;
      const from = t - (t - w.from) * f;
      const to = t + (w.to - t) * f;
      target.zoom(
        to - from >= input.span.to - input.span.from ? null : { from, to: Math.max(to, from + 10) },
      );
    },
    { passive: false },
  );
}
