import type { VizAgentDetail } from '../viz-turn.ts';
import type { VizChart } from '../statechart-graph.ts';
import type { VizEvent, VizState } from '../viz-state-types.ts';
import { emptyVizState } from '../viz-state.ts';
import type { TimelinePick } from './timeline-types.ts';

/*
 * What the page shows, in one place: the mode, the state at the instant shown and the whole history, the
 * selection, the charts, the event log and the times of turns and rounds. The modes (live, replay, runs)
 * write it; the panels read it.
 */

export interface View {
  mode: 'live' | 'replay' | 'index';
  runId: string | null;
  /** The state at the instant shown. */
  state: VizState;
  /** The whole history (replay: the fold of the whole log; live: the state now). */
  history: VizState;
  now: number | null;
  selected: string | null;
  chart: VizChart | null;
  /** The statecharts of the breaker and the supervisor (the agent's is `chart`). */
  charts: { breaker: VizChart | null; supervisor: VizChart | null };
  /** Which machine the chart panel draws. */
  machine: 'agent' | 'breaker' | 'supervisor';
  /** Replay: the run's first and last event times. */
  span: { start: number; end: number } | null;
  /** The events the list shows (runtime events, no samples), in log order. */
  log: VizEvent[];
  filter: string;
  /** When each turn completed (`agent|round|itemId` → at), from the log: the detail follows the scrubber. */
  turnAt: Map<string, number>;
  /** When each round was committed, from the log. */
  roundAt: Map<number, number>;
  /** The selected agent's stored turns and snapshot, fetched once per selection (and per commit live). */
  detail: { agent: string; round: number; turns: number; fetchedAt: number; data: VizAgentDetail } | null;
  pick: TimelinePick | null;
}

export const view: View = {
  mode: 'index',
  runId: null,
  state: emptyVizState(),
  history: emptyVizState(),
  now: null,
  selected: null,
  chart: null,
  charts: { breaker: null, supervisor: null },
  machine: 'agent',
  span: null,
  log: [],
  filter: '',
  turnAt: new Map(),
  roundAt: new Map(),
  detail: null,
  pick: null,
};

export function agentNames(state: VizState): string[] {
  return Object.keys(state.agents).sort();
}

/** Notes when a turn completed and when a round was committed (the detail follows the instant with them). */
export function noteTurn(e: VizEvent): void {
  if (e.type === 'round.committed') view.roundAt.set(Number(e.data.round), e.at);
  if (e.type !== 'turn.completed') return;
  const d = e.data as { round?: number; itemId?: string };
  // Every agent works the same items: the key names the agent.
  if (d.round !== undefined && d.itemId !== undefined && e.agent)
    view.turnAt.set(`${e.agent}|${d.round}|${d.itemId}`, e.at);
}
