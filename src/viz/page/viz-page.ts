import type { VizChart } from '../statechart-graph.ts';
import type { VizPageConfig } from '../viz-api.ts';
import { startIndex } from './index-mode.ts';
import { startLive } from './live-mode.ts';
import { setText, testid } from './page-dom.ts';
import { getJson } from './page-json.ts';
import { render } from './page-render.ts';
import { view } from './page-view.ts';
import { listenForCardPress } from './panels/agents-panel.ts';
import { listenForMachineChoice } from './panels/chart-panel.ts';
import { select } from './panels/detail-panel.ts';
import { listenForEventList } from './panels/events-panel.ts';
import { showEvent, showPick } from './panels/inspect-panel.ts';
import { exposeTimeline, mountTimeline } from './panels/timeline-panel.ts';
import { renderWith } from './render-frame.ts';
import { startReplay } from './replay-mode.ts';
import { showInstant } from './replay-scrubber.ts';
import { listenForTimeMode } from './time-mode.ts';

/*
 * The visualizer page. Live: folds the SSE feed (/api/live) with the same reducer as the server.
 * Replay (?run=<id>): loads the run's event log and shows the fold of the events at or before the
 * scrubber's instant; the timeline always shows the whole run (the same instant looks the same wherever
 * the scrubber is). Rendering is incremental: elements are built once and their text updated, the
 * timeline is one canvas, and live redraws are paced, so a storm's thousands of events a minute leave
 * the main thread free for clicks. Every element a test reads has a stable data-testid.
 *
 * This is the page's entry (esbuild bundles it with everything it imports): it wires the panels
 * (panels/*-panel.ts) to each other and starts the mode the server and the URL ask for (live-mode.ts,
 * replay-mode.ts, index-mode.ts).
 */

function wire(): void {
  renderWith(render);
  mountTimeline(showPick);
  listenForMachineChoice();
  listenForCardPress(select);
  listenForEventList(showEvent);
  exposeTimeline();
}

function wireTime(): void {
  listenForTimeMode(() => {
    if (view.mode === 'replay') showInstant();
    else render();
  });
}

async function main(): Promise<void> {
  wire();
  wireTime();
  const config = await getJson<VizPageConfig>('/api/config');
  [view.chart, view.charts.breaker, view.charts.supervisor] = await Promise.all([
    getJson<VizChart>('/api/chart?machine=agent'),
    getJson<VizChart>('/api/chart?machine=breaker'),
    getJson<VizChart>('/api/chart?machine=supervisor'),
  ]);
  const asked = new URLSearchParams(location.search).get('run');
  if (asked && config.replay) return startReplay(asked);
  if (config.live) {
    startLive(null, config);
    return;
  }
  if (config.runId && config.replay) return startReplay(config.runId);
  if (config.replay) return startIndex();
  setText(testid('mode'), 'nothing to show');
}

main().catch((e: unknown) => {
  setText(testid('mode'), 'error');
  setText(testid('connection'), e instanceof Error ? e.message : String(e));
});
