/**
 * The state visualizer: a reducer shared by the live view and the replay, a live feed over a running
 * supervisor, and a 127.0.0.1 server for the page.
 *
 * @example
 * ```ts
 * import { createLiveSource, startVizServer } from './viz/index.ts';
 * const live = createLiveSource(supervisor, { clock, runId, store });
 * const viz = await startVizServer({ live, store, port: 0, signal });
 * console.log(`visualizer: ${viz.url}`);
 * ```
 */
export {
  createLiveSource,
  turnFromRecord,
  type LiveSource,
  type LiveSourceOptions,
  type VizAgentDetail,
  type VizLiveSource,
  type VizTurn,
} from './live-source.ts';
export {
  agentStatechart,
  statechartOf,
  type VizChart,
  type VizChartEdge,
  type VizChartNode,
} from './statechart-graph.ts';
export { startVizServer, type VizPageConfig, type VizServer, type VizServerOptions } from './viz-server.ts';
export { eventFromRecord } from '../core/stored-event.ts';
export {
  applyEvent,
  breakerLabel,
  emptyVizState,
  foldEvents,
  stateAt,
  type VizAgent,
  type VizEndpoint,
  type VizEvent,
  type VizSampleEvent,
  type VizState,
  type VizTokens,
} from './viz-state.ts';
