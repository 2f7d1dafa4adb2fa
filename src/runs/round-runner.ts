import { sleep, type Clock } from '../clock/clock.ts';
import { holdClock } from '../clock/virtual-clock.ts';
import type { RuntimeEventListener } from '../core/runtime-event.ts';
import type { Turn } from '../core/turn.ts';
import type { RoundPlan, ScenarioSpec } from '../scenarios/scenario-types.ts';
import { durableAgentState } from '../runtime/agent-snapshot.ts';
import type { AgentStateInput, LogEventInput, RunRecord, TurnInput } from '../store/store-types.ts';
import { crashPoint } from '../store/crash-point.ts';
import type { RunStore } from '../store/run-store.ts';
import { keyFormatOf, type TurnKeyFormat, turnKey } from '../store/turn-key.ts';
import { type PeerAnswer, roundPrompt } from './round-prompt.ts';
import type { TurnExecutor } from './turn-executor.ts';

/** Progress of a run, as the live view shows it. */
export interface RoundProgress {
  readonly round: number;
  readonly rounds: number;
  readonly done: number;
  readonly total: number;
}

/** Options of {@link runRounds}. */
export interface RunRoundsOptions {
  readonly runId: string;
  readonly spec: ScenarioSpec;
  readonly plans: readonly RoundPlan[];
  readonly executor: TurnExecutor;
  readonly store: RunStore;
  readonly clock: Clock;
  /** Agents whose memory is committed with every round. */
  readonly agents: readonly string[];
  readonly machineVersion: string;
  /** Receives the runner's own events (round.started, round.committed). */
  readonly emit: RuntimeEventListener;
  /**
   * The run's events heard since the last commit (`EventRecorder`): committed with each round, in the same
   * statement, followed by its `round.committed`. Default none: the rounds are committed without events.
   */
  readonly journal?: RoundJournal;
  /** Called after each commit. Default none. */
  readonly afterCommit?: (round: number) => Promise<void>;
  readonly onProgress?: (progress: RoundProgress) => void;
  readonly signal?: AbortSignal;
}

/**
 * Runs the rounds of a run that are not committed yet, committing each one exactly once: its turns, every
 * agent's memory and actor snapshot, and the endpoints' health, in one transaction with a compare-and-set on
 * the run's current round. Turns inside a round run concurrently (asks to one agent run in order); scheduled
 * turns wait on the clock for their firing time. A crash loses at most the round in progress, whose finished
 * engine calls are read back from the call memo when it is run again.
 *
 * @example
 * ```ts
 * await runRounds({ runId, spec, plans, executor, store, clock, agents, machineVersion, emit });
 * ```
 */
export async function runRounds(o: RunRoundsOptions): Promise<RunRecord> {
  const run = await o.store.getRun(o.runId);
  if (!run) throw new Error(`run ${o.runId} does not exist; start it with \`breakwater run\``);
  const rounds = o.plans.length;
  const seePrevious = o.spec.rounds?.seePreviousRound ?? true;
  for (const plan of o.plans) {
    if (plan.round <= run.currentRound) continue;
    o.signal?.throwIfAborted();
    o.emit({ type: 'round.started', at: o.clock.now(), data: { round: plan.round } });
    // Store reads and writes are real work: a virtual clock stands still through them, so the next
    // round's firings are not overtaken by a slow commit.
    const peers =
      seePrevious && o.spec.rounds && plan.round > 1
        ? await held(o.clock, () => previousAnswers(o.store, o.runId, plan.round - 1))
        : new Map<string, PeerAnswer[]>();
    const results = await askRoundTurns(
      { ...o, keyFormat: keyFormatOf(run.config) },
      plan,
      plan.turns,
      peers,
      rounds,
    );
    o.signal?.throwIfAborted();
    await held(o.clock, () => commitRound(o, plan, results));
  }
  return o.store.setRunStatus(o.runId, 'completed');
}

/** Where a round's events wait for its commit (the event recorder). */
export interface RoundJournal {
  /** The events heard since the last commit, in order. */
  take(): LogEventInput[];
  /** The round the last `take` went to is committed. */
  committed(): void;
}

/** One asked turn of a round, as the round commit takes it. */
export interface AskedTurn {
  readonly itemId: string;
  readonly key: string;
  readonly turn: Turn;
  /** The order in which its agent finished it among its turns of the round (its memory's order). */
  readonly agentOrder: number;
}

/**
 * Asks `turns` (all or part of a round's planned turns) concurrently — asks to one agent settle in order —
 * each at its firing time. The turn key ({@link turnKey}: run, round, item, agent, each part escaped, so no two turns
 * share one) is the call memo's prefix, so a turn asked again (a resumed run, a worker taking over another's agents)
 * reads back the calls that had finished — its own, never another turn's.
 *
 * @example
 * ```ts
 * const results = await askRoundTurns(options, plan, plan.turns, peers, plans.length);
 * ```
 */
export async function askRoundTurns(
  o: Pick<RunRoundsOptions, 'runId' | 'executor' | 'clock' | 'onProgress' | 'signal'> & {
    /** How the run's keys are spelled (`keyFormatOf(run.config)`). Default the current format. */
    readonly keyFormat?: TurnKeyFormat;
  },
  plan: RoundPlan,
  turns: readonly RoundPlan['turns'][number][],
  peers: ReadonlyMap<string, readonly PeerAnswer[]>,
  rounds: number,
): Promise<AskedTurn[]> {
  let done = 0;
  const total = turns.length;
  const finished = new Map<string, number>();
  o.onProgress?.({ round: plan.round, rounds, done, total });
  return Promise.all(
    turns.map(async (pt) => {
      if (pt.at !== undefined) await sleep(o.clock, pt.at - o.clock.now(), o.signal);
      const others = (peers.get(pt.itemId) ?? []).filter((p: PeerAnswer) => p.agent !== pt.agent);
      const prompt =
        pt.prompt ?? roundPrompt(pt.item ?? { id: pt.itemId, title: pt.itemId }, plan.round, rounds, others);
      const key = turnKey(
        { runId: o.runId, round: plan.round, itemId: pt.itemId, agent: pt.agent },
        o.keyFormat,
      );
      const turn = await o.executor.ask({
        agent: pt.agent,
        prompt,
        key,
        turnId: key,
        meta: { round: plan.round, itemId: pt.itemId },
        ...(o.signal ? { signal: o.signal } : {}),
      });
      const agentOrder = finished.get(pt.agent) ?? 0;
      finished.set(pt.agent, agentOrder + 1);
      o.onProgress?.({ round: plan.round, rounds, done: ++done, total });
      return { itemId: pt.itemId, key, turn, agentOrder };
    }),
  );
}

/** Runs `work` (store I/O) with `clock` held: a virtual clock does not move until it is done. */
async function held<T>(clock: Clock, work: () => Promise<T>): Promise<T> {
  const release = holdClock(clock);
  try {
    return await work();
  } finally {
    release();
  }
}

/** Commits one finished round: its turns, the agents' states that changed, the endpoints' health. */
async function commitRound(
  o: RunRoundsOptions,
  plan: RoundPlan,
  results: readonly { itemId: string; key: string; turn: Turn; agentOrder: number }[],
): Promise<void> {
  await o.executor.settle?.();
  const turns: TurnInput[] = results.map(({ itemId, key, turn, agentOrder }) => ({
    ...toTurnInput(itemId, key, turn),
    agentOrder,
  }));
  const states: AgentStateInput[] = [];
  for (const agent of o.agents) {
    const persisted = o.executor.persistedSnapshot(agent);
    if (persisted !== undefined)
      states.push({ agent, machineVersion: o.machineVersion, ...durableAgentState(persisted) });
  }
  const health = o.executor.durableHealth?.();
  const done = {
    type: 'round.committed',
    at: o.clock.now(),
    data: { round: plan.round, turns: turns.length },
  } as const;
  // The round's events are written with it: they exist exactly when it does.
  const events = o.journal ? [...o.journal.take(), { ...done, agent: null, endpoint: null }] : undefined;
  await o.store.commitRound(
    {
      runId: o.runId,
      round: plan.round,
      turns,
      states,
      ...(health !== undefined ? { health } : {}),
      summary: { health: o.executor.health(), counts: countOutcomes(turns) },
      ...(events ? { events } : {}),
    },
    o.signal ? { signal: o.signal } : {},
  );
  crashPoint('after-commit');
  o.journal?.committed();
  o.emit(done);
  await o.afterCommit?.(plan.round);
}

/** A finished turn as `commitRound` stores it. */
export function toTurnInput(itemId: string, key: string, turn: Turn): TurnInput {
  return {
    itemId,
    agent: turn.agent,
    prompt: { text: turn.prompt },
    answer: {
      text: turn.answer.text,
      ...(turn.answer.degraded ? { degraded: turn.answer.degraded } : {}),
      ...(turn.error ? { error: turn.error } : {}),
      ...(turn.messages.length > 0 ? { messages: turn.messages } : {}),
    },
    outcome: turn.outcome === 'cancelled' ? 'failed' : turn.outcome,
    endpointId: turn.endpointId ?? null,
    degraded: turn.degraded,
    usage: turn.usage,
    faults: turn.faults,
    waitMs: Math.round(turn.waitMs),
    idempotencyKey: key,
  };
}

function countOutcomes(turns: readonly TurnInput[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const t of turns) counts[t.outcome] = (counts[t.outcome] ?? 0) + 1;
  return counts;
}

/**
 * The answers of a committed round by item, each with its agent (the next round's prompts show them).
 *
 * @example
 * ```ts
 * const peers = await previousAnswers(store, runId, round - 1);
 * ```
 */
export async function previousAnswers(
  store: RunStore,
  runId: string,
  round: number,
): Promise<Map<string, PeerAnswer[]>> {
  const byItem = new Map<string, PeerAnswer[]>();
  for (const t of await store.listTurns(runId, { round })) {
    const text = (t.answer as { text?: string } | null)?.text ?? '';
    if (!text) continue;
    const list = byItem.get(t.itemId) ?? [];
    list.push({ agent: t.agent, answer: text });
    byItem.set(t.itemId, list);
  }
  return byItem;
}
