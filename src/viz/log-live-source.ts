import type { RuntimeEvent, RuntimeEventListener } from '../core/runtime-event.ts';
import type { RunStore } from '../store/run-store.ts';
import type { LiveSource } from './live-source.ts';
import { turnFromRecord } from './viz-turn.ts';
import { applyEvent, emptyVizState } from './viz-state.ts';
import type { VizEvent, VizState } from './viz-state-types.ts';

/** Options of {@link createLogLiveSource}. */
export interface LogLiveSourceOptions {
  /** The run the log belongs to. */
  readonly runId: string;
  /** The run's store: an agent's turns (committed rounds) and last committed snapshot come from it. Default none. */
  readonly store?: RunStore;
  /** The run's global token limit (the scenario's `concurrency.limit`). Default `null` (unknown). */
  readonly limit?: number | null;
}

/** A live source fed from a run's event log: its state is also what `/metrics` reads. */
export interface LogLiveSource extends LiveSource {
  /** The state folded from every event so far (no sampling: the log is the only input). */
  state(): VizState;
}

/**
 * The visualizer's live feed of a run whose runtime is not in this process: a run spread over worker processes,
 * followed through its event log (`createRunEventTail`). Every worker's events are folded in the log's order, so
 * the page shows the whole run: every agent, every endpoint's breaker and cooldowns, every token held across
 * workers. Token counts are taken from the holders listed, not from each event's `held` (one worker's own count).
 *
 * @example
 * ```ts
 * const tail = createRunEventTail(store, runId);
 * const live = createLogLiveSource(tail, { runId, store, limit: 3 });
 * const viz = await startVizServer({ live, store, port: 0 });
 * ```
 */
export function createLogLiveSource(
  feed: { subscribeEvents(listener: RuntimeEventListener): () => void },
  options: LogLiveSourceOptions,
): LogLiveSource {
  const listeners = new Set<(event: VizEvent) => void>();
  let state = emptyVizState({ limit: options.limit ?? null });
  let closed = false;
  const fold = (event: VizEvent) => {
    state = applyEvent(state, event);
    for (const l of listeners) l(event);
  };
  const unsubscribe = feed.subscribeEvents((event: RuntimeEvent) => {
    if (closed) return;
    fold(acrossWorkers(event));
  });
  const { store, runId } = options;
  return {
    runId,
    state: () => state,
    snapshot: () => state,
    publish(event) {
      if (!closed) fold(event);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async agentDetail(name, signal) {
      if (!store || !Object.hasOwn(state.agents, name)) return undefined;
      const records = await store.listTurns(runId, signal ? { signal } : {});
      const turns = records.filter((t) => t.agent === name).map(turnFromRecord);
      return { agent: name, turns, snapshot: null, memory: null };
    },
    close() {
      closed = true;
      unsubscribe();
      listeners.clear();
    },
  };
}

/** A token event without its worker's own count of tokens held: the fold counts the holders of every worker. */
function acrossWorkers(event: RuntimeEvent): VizEvent {
  if (event.type !== 'token.granted' && event.type !== 'token.released') return event;
  const { held: _held, ...data } = event.data;
  return { ...event, data } as VizEvent;
}
