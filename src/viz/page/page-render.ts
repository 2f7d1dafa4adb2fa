import { setText, testid } from './page-dom.ts';
import { view } from './page-view.ts';
import { forgetChart, renderChart } from './panels/chart-panel.ts';
import { forgetDetail, renderDetail } from './panels/detail-panel.ts';
import { forgetEndpoints, renderEndpoints } from './panels/endpoints-panel.ts';
import { forgetEvents, renderEvents } from './panels/events-panel.ts';
import { renderAgents } from './panels/agents-panel.ts';
import { forgetRunChecks, renderRun } from './panels/run-panel.ts';
import { renderTimeline } from './panels/timeline-panel.ts';
import { forgetTokens, renderTokens } from './panels/tokens-panel.ts';
import { clockText } from './time-format.ts';

/** Draws the page at the instant shown: the clock, then every panel (each skips what did not change). */
export function render(): void {
  const { state } = view;
  setText(testid('clock'), clockText(view.now));
  setText(testid('run-id'), view.runId ? `run ${view.runId}` : '');
  renderRun(state);
  renderAgents(state);
  renderTokens(state);
  renderEndpoints(state);
  renderChart(state);
  renderTimeline();
  renderEvents();
  renderDetail(state);
}

/** Every panel that writes a time is drawn again on the next render (the way times are written changed). */
export function forgetDrawnTimes(): void {
  forgetRunChecks();
  forgetTokens();
  forgetEndpoints();
  forgetChart();
  forgetEvents();
  forgetDetail();
}
