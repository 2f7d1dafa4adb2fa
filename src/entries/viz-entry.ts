/**
 * `breakwater/viz`: the state visualizer. A live feed over a running supervisor, the reducer the page and the
 * replay share, and a 127.0.0.1 server for the page (bundled at build time: no bundler at run time).
 *
 * @example
 * ```ts
 * import { createLiveSource, startVizServer } from 'breakwater/viz';
 * const live = createLiveSource(supervisor, { runId: 'r1' });
 * const viz = await startVizServer({ live, port: 0 });
 * console.log(`visualizer: ${viz.url}`);
 * ```
 */
export {
  createLiveSource,
  type LiveSource,
  type LiveSourceOptions,
  type VizLiveSource,
} from '../viz/live-source.ts';
export { turnFromRecord, type VizAgentDetail, type VizTurn } from '../viz/viz-turn.ts';
export type { VizChart, VizChartEdge, VizChartNode } from '../viz/viz-chart.ts';
export { startVizServer, type VizServer, type VizServerOptions } from '../viz/viz-server.ts';
export type { VizPageConfig } from '../viz/viz-api.ts';
export { eventFromRecord } from '../core/stored-event.ts';
export { applyEvent, emptyVizState, foldEvents, stateAt } from '../viz/viz-state.ts';
export { breakerLabel } from '../viz/viz-event-handlers.ts';
export type {
  VizAgent,
  VizEndpoint,
  VizEvent,
  VizSampleEvent,
  VizState,
  VizTokens,
} from '../viz/viz-state-types.ts';
