import { type Clock, systemClock } from '../clock/clock.ts';
import type { RuntimeEvent } from '../core/runtime-event.ts';
import type { Supervisor } from '../runtime/create-supervisor.ts';
import type { RunStore } from '../store/run-store.ts';
import type {
  VizAgentSample,
  VizEvent,
  VizHealthSample,
  VizSampleEvent,
  VizState,
} from './viz-state-types.ts';
import { applyEvent, emptyVizState } from './viz-state.ts';

/** One turn as the agent panel lists it. */
export interface VizTurn {
  readonly turnId: string | null;
  readonly round: number | null;
  readonly itemId: string | null;
  readonly prompt: unknown;
  readonly answer: unknown;
  readonly outcome: string | null;
  readonly endpoint: string | null;
  readonly degraded: boolean;
  readonly faults: readonly string[];
}

/** What the agent panel shows for one agent: its turns and its latest snapshot. */
export interface VizAgentDetail {
  readonly agent: string;
  readonly turns: readonly VizTurn[];
  /** The agent actor's persisted snapshot (live) or the latest committed one (replay). */
  readonly snapshot: unknown;
  /** Memory slots, when known. */
  readonly memory: unknown;
}

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

/** Bucket levels as the page shows them (whole tokens): a refill of a fraction is not a change. */
function roundedHealth(h: VizHealthSample): VizHealthSample {
  const level = (b: VizHealthSample['rpm']) =>
    b ? { ...b, ...(b.available !== undefined ? { available: Math.floor(b.available) } : {}) } : b;
  return { ...h, ...(h.rpm ? { rpm: level(h.rpm) } : {}), ...(h.tpm ? { tpm: level(h.tpm) } : {}) };
}

/**
 * What changed since the previous sample: the agents and endpoints whose JSON differs, the tokens when they
 * differ. The reducer folds a partial sample as well as a full one (absent parts are left as they are), so
 * the feed carries deltas, not full samples.
 */
function sampleDelta(previous: Map<string, string>, full: VizSampleEvent): VizSampleEvent {
  const agents = (full.data.agents ?? []).filter((a) => changed(previous, `a:${a.name}`, a));
  const endpoints = (full.data.endpoints ?? []).filter((e) => changed(previous, `e:${e.id}`, e));
  const tokens = full.data.tokens && changed(previous, 't', full.data.tokens) ? full.data.tokens : undefined;
  return {
    type: 'viz.sample',
    at: full.at,
    data: {
      ...(agents.length ? { agents } : {}),
      ...(endpoints.length ? { endpoints } : {}),
      ...(tokens ? { tokens } : {}),
    },
  };
}

function changed(previous: Map<string, string>, key: string, value: unknown): boolean {
  const json = JSON.stringify(value);
  if (previous.get(key) === json) return false;
  previous.set(key, json);
  return true;
}

function pathOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    const [key, child] = Object.entries(value)[0] ?? ['idle', undefined];
    return child === undefined ? key : `${key}.${pathOf(child)}`;
  }
  return 'idle';
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
  const listeners = new Set<(event: VizEvent) => void>();
  let state = emptyVizState({ limit: supervisor.config.concurrency.limit });
  let closed = false;

  const fold = (event: VizEvent) => {
    state = applyEvent(state, event);
    for (const l of listeners) l(event);
  };

  const takeSample = (): VizSampleEvent => {
    const agents: VizAgentSample[] = supervisor.agents().map((h) => {
      const snap = h.actor?.getSnapshot() as
        | { value: unknown; status: string; context?: { settings?: { chain?: string } } }
        | undefined;
      const chain = snap?.context?.settings?.chain;
      const path = snap && snap.status === 'active' ? pathOf(snap.value) : undefined;
      return {
        name: h.name,
        tier: h.tier,
        state: h.state(),
        ...(chain ? { chain } : {}),
        ...(snap ? {} : { noAgent: true }),
        ...(path ? { path } : {}),
      };
    });
    return {
      type: 'viz.sample',
      at: clock.now(),
      data: {
        agents,
        endpoints: supervisor.health().map((h) => roundedHealth(h as VizHealthSample)),
        tokens: supervisor.tokens(),
      },
    };
  };
  const sent = new Map<string, string>();
  const takeDelta = () => sampleDelta(sent, takeSample());

  let pending = false;
  let lastSampleAt = 0;
  const minGap = options.minSampleGapMs ?? 100;
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

  const interval = options.sampleIntervalMs ?? 500;
  // A display refresh in real time (countdowns, bucket refills): not a runtime deadline.
  const timer = interval > 0 ? setInterval(() => !closed && fold(takeDelta()), interval) : undefined;
  timer?.unref?.();

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
    async agentDetail(name, signal) {
      const handle = supervisor.agent(name);
      if (!handle) {
        // A stopped runtime has no agents; a run's turns are still in the store.
        if (!options.store || options.runId === undefined) return undefined;
        const records = await options.store.listTurns(options.runId, signal ? { signal } : {});
        const turns = records.filter((t) => t.agent === name).map(turnFromRecord);
        return turns.length > 0 ? { agent: name, turns, snapshot: null, memory: null } : undefined;
      }
      const memory = handle.memory();
      let turns: VizTurn[];
      if (options.store && options.runId !== undefined) {
        const records = await options.store.listTurns(options.runId, signal ? { signal } : {});
        turns = records.filter((t) => t.agent === name).map(turnFromRecord);
      } else {
        turns = memory.utterances.map((u) => ({
          turnId: u.turnId,
          round: null,
          itemId: null,
          prompt: u.prompt,
          answer: u.answer,
          outcome: u.degraded ? 'degraded' : 'answered',
          endpoint: u.endpointId ?? null,
          degraded: u.degraded,
          faults: [],
        }));
      }
      return { agent: name, turns, snapshot: handle.persistedSnapshot() ?? null, memory: memory.slots };
    },
    close() {
      closed = true;
      unsubscribe();
      if (timer) clearInterval(timer);
      listeners.clear();
    },
  };
}

/**
 * A committed turn (store `TurnRecord`) as the agent panel lists it.
 *
 * @example
 * ```ts
 * const turns = (await store.listTurns(runId)).filter((t) => t.agent === 'analyst').map(turnFromRecord);
 * ```
 */
export function turnFromRecord(t: {
  round: number;
  itemId: string;
  prompt: unknown;
  answer: unknown;
  outcome: string;
  endpointId: string | null;
  degraded: boolean;
  faults: readonly { kind?: string }[];
}): VizTurn {
  return {
    turnId: null,
    round: t.round,
    itemId: t.itemId,
    prompt: t.prompt,
    answer: t.answer,
    outcome: t.outcome,
    endpoint: t.endpointId,
    degraded: t.degraded,
    faults: (t.faults ?? []).map((f) => f?.kind ?? 'fault'),
  };
}
