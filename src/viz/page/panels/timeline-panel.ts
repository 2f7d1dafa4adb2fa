import { byId } from '../page-dom.ts';
import { agentNames, view } from '../page-view.ts';
import { shortTime, timeFmt } from '../time-format.ts';
import { createTimeline } from '../timeline-canvas.ts';
import type { Timeline, TimelinePick } from '../timeline-types.ts';

/*
 * The timeline panel: the canvas widget (timeline-canvas.ts) fed with the whole history, the instant shown
 * and the run's span; its fit button; and the hooks tests and tools read it through.
 */

let timeline: Timeline | null = null;

/** The timeline on its canvas: a click shows what it picked (`onPick`); the fit button shows the whole run. */
export function mountTimeline(onPick: (pick: TimelinePick) => void): void {
  const canvas = byId('timeline-canvas') as HTMLCanvasElement;
  timeline = createTimeline(canvas, onPick, () => renderTimeline());
  byId('timeline-fit').addEventListener('click', () => timeline?.fit());
}

export function renderTimeline(): void {
  const history = view.history;
  const agents = agentNames(history).map((n) => history.agents[n]!);
  const now = view.now;
  const canvas = byId('timeline-canvas') as HTMLCanvasElement;
  if (now === null || agents.length === 0) {
    canvas.hidden = true;
    return;
  }
  canvas.hidden = false;
  const first = Math.min(...agents.map((a) => a.segments[0]?.from ?? now));
  const span = view.span
    ? { from: view.span.start, to: view.span.end }
    : { from: history.run.startedAt ?? first, to: Math.max(now, first + 1) };
  timeFmt.origin ??= span.from;
  timeline?.draw({
    agents,
    span,
    now,
    end: view.span ? view.span.end : now,
    cursor: view.mode === 'replay',
    label: shortTime,
  });
}

/** For tests and tools: where the timeline draws what (`window.breakwaterViz`). */
export function exposeTimeline(): void {
  (window as unknown as { breakwaterViz: unknown }).breakwaterViz = {
    markerPoint: (agent: string, i: number) => timeline?.markerPoint(agent, i) ?? null,
    geometry: () => timeline?.geometry() ?? null,
    zoomTo: (from: number, to: number) => timeline?.zoomTo(from, to),
    /** Each lane's states and fault count, as the timeline draws them (whole history). */
    lanes: () =>
      Object.fromEntries(
        Object.values(view.history.agents).map((a) => [
          a.name,
          { states: a.segments.map((g) => g.state), markers: a.markers.length, calls: a.calls.length },
        ]),
      ),
  };
}
