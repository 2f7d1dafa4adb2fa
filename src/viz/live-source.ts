import { type Clock, systemClock } from '../clock/clock.ts';
import type { RuntimeEvent } from '../core/runtime-event.ts';
import type { Supervisor } from '../runtime/create-supervisor.ts';
import type { RunStore } from '../store/run-store.ts';
import { liveAgentDetail } from './live-agent-detail.ts';
import { sampleDelta, sampleSupervisor } from './live-samples.ts';
import type { VizEvent, VizState } from './viz-state-types.ts';
import { applyEvent, emptyVizState } from './viz-state.ts';
import type { VizAgentDetail } from './viz-turn.ts';

/**
 * The live feed the visualizer server streams: the reducer's state now, every event as it happens
 * (runtime events and health samples), and an agent's details on demand.
 */
export interface VizLiveSource {
  /** The run the live runtime belongs to, when there is one (its turns are then read from the store). */
  readonly runId?: string;
  /** The state now: the fold of every event seen so far and of a sample of the runtime taken now. */
  snapshot(): VizState;
  /** Calls `listener` with every event folded after this moment. Returns the unsubscribe function. */
  subscribe(listener: (event: VizEvent) => void): () => void;
  /** Turns and snapshot of one agent; `undefined` for an unknown agent. */
  agentDetail?(name: string, signal?: AbortSignal): Promise<VizAgentDetail | undefined>;
}

/** Options of {@link createLiveSource}. */
export interface LiveSourceOptions {
  /** The run being recorded; with `store`, an agent's turns come from its committed rounds. Default none. */
  readonly runId?: string;
  /** The durable store of the run. Default none: turns come from the agents' memory. */
  readonly store?: RunStore;
  /**
   * The runtime's clock: samples are stamped with it. Default: the clock the supervisor's actor runs on (the
   * one handed to `createSupervisor`, simulated in a time-scaled run), else the system clock.
   */
  readonly clock?: Clock;
  /**
   * Real-time interval between health samples (bucket refills and countdowns move without events), ms.
   * Samples are also taken right after every burst of events. 0 = only after events. Default 500.
   */
  readonly sampleIntervalMs?: number;
  /**
   * Least real time between two samples taken after bursts of events, ms: a storm's thousands of events
   * make a few samples a second, not one per burst. Default 100.
   */
  readonly minSampleGapMs?: number;
}

/** A live source that can be stopped. */
export interface LiveSource extends VizLiveSource {
  /**
   * Folds and streams an event the supervisor does not emit itself: the run's own events (`run.started`,
   * `round.started`, `round.committed`, `run.finished`) and, once the run ended, its report (`viz.report`).
   */
  publish(event: VizEvent): void;
  /** Stops listening to the runtime and stops sampling. */
  close(): void;
}

/**
 * Builds the visualizer's live feed from a running supervisor: every runtime event (`subscribeEvents`),
 * folded with {@link applyEvent}, plus samples of `health()` (breakers, cooldowns, bucket levels, in
 * flight), `tokens()` (held, limit, queue by tier) and each agent's full state path.
 *
 * @example
 * ```ts
 * const supervisor = createSupervisor(config, { clock });
 * const live = createLiveSource(supervisor, { clock });
 * const viz = await startVizServer({ live, port: 0 });
 * console.log(`open ${viz.url}`);
 * ```
 */
export function createLiveSource(supervisor: Supervisor, options: LiveSourceOptions = {}): LiveSource {
  const clock = options.clock ?? supervisor.clock ?? systemClock;
  const minGap = options.minSampleGapMs ?? 100;
  const interval = options.sampleIntervalMs ?? 500;
  const listeners = new Set<(event: VizEvent) => void>();
  let state = emptyVizState({ limit: supervisor.config.concurrency.limit });
  let closed = false;

  const fold = (event: VizEvent) => {
    state = applyEvent(state, event);
    for (const l of listeners) l(event);
  };

  const sent = new Map<string, string>();
  const takeDelta = () => sampleDelta(sent, sampleSupervisor(supervisor, clock));

  let pending = false;
  let lastSampleAt = 0;
  const sampleSoon = () => {
    if (pending || closed) return;
    pending = true;
    // After the burst: the events of one transition are emitted synchronously, the health they change
    // is read once they are all out; in a storm, at most one sample per `minSampleGapMs` (real time).
    const wait = Math.max(0, lastSampleAt + minGap - Date.now());
    const run = () => {
      pending = false;
      lastSampleAt = Date.now();
      if (!closed) fold(takeDelta());
    };
    if (wait === 0) queueMicrotask(run);
    else setTimeout(run, wait).unref?.();
  };

  const unsubscribe = supervisor.subscribeEvents((event: RuntimeEvent) => {
    if (closed) return;
    fold(event);
    sampleSoon();
  });
  fold(takeDelta());

  // A display refresh in real time (countdowns, bucket refills): not a runtime deadline.
  const timer = interval > 0 ? setInterval(() => !closed && fold(takeDelta()), interval) : undefined;
  timer?.unref?.();

  const detailSource = { supervisor, store: options.store, runId: options.runId };
  return {
    ...(options.runId !== undefined ? { runId: options.runId } : {}),
    snapshot() {
      // Read the runtime now: agents spawned since the last event or sample are in it too.
      if (!closed) fold(takeDelta());
      return state;
    },
    publish(event) {
      if (!closed) fold(event);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    agentDetail: (name, signal) => liveAgentDetail(detailSource, name, signal),
    close() {
      closed = true;
      unsubscribe();
      if (timer) clearInterval(timer);
      listeners.clear();
    },
  };
}
