import { AGENT_MACHINE_VERSION } from '../../../machines/agent.machine.ts';
import type { RuntimeEventListener } from '../../core/runtime-event.ts';
import { durableAgentState } from '../../runtime/agent-snapshot.ts';
import type { RuntimeConfigInput } from '../../runtime/runtime-config.ts';
import type { RoundPlan } from '../../scenarios/scenario-types.ts';
import { crashPoint } from '../../store/crash-point.ts';
import type { RunStore } from '../../store/run-store.ts';
import type { AgentStateInput, TurnInput } from '../../store/store-types.ts';
import { keyFormatOf } from '../../store/turn-key.ts';
import { type BreakwaterExecutor, createBreakwaterExecutor } from '../breakwater-executor.ts';
import type { PeerAnswer } from '../round-prompt.ts';
import { type AskedTurn, askRoundTurns, previousAnswers, toTurnInput } from '../round-runner.ts';
import { applyRunRestore, loadRunRestore } from '../run-restore.ts';
import { historyTurnsOf } from '../run-scenario.ts';
import { storeCallMemo } from '../store-call-memo.ts';
import { type HeldParts, holdParts } from './part-lease.ts';
import { type PartClaim, rememberCallHeld, stagePart } from './round-parts.ts';
import { notifyRound } from './round-wakeup.ts';
import type { RunWorkerOptions } from './run-worker-options.ts';
import type { RunContext } from './worker-run-context.ts';

/**
 * Asks the claimed agents' turns of the round on a runtime restored from the last commit, and stages them.
 * Returns how many turns it staged.
 */
export async function workParts(
  options: RunWorkerOptions,
  store: RunStore,
  ctx: RunContext,
  plan: RoundPlan,
  claims: readonly PartClaim[],
  leaseFrom: number,
): Promise<number> {
  const held = holdParts(options.database, claims, ctx.workers.leaseTtlMs, leaseFrom);
  const signal = options.signal ? AbortSignal.any([options.signal, held.lost]) : held.lost;
  let runtime: PartsRuntime;
  try {
    runtime = await openPartsRuntime(options, store, ctx, plan, claims);
  } catch (e) {
    held.stop();
    throw e;
  }
  const { executor } = runtime;
  const tally = { staged: 0 };
  try {
    applyRunRestore(executor.supervisor, runtime.restore);
    const results = await askParts(store, ctx, plan, claims, executor, signal);
    await executor.settle?.();
    // Stopped (or the parts lost) while asking: a turn cut short ends `cancelled`; staged, it would be committed
    // as the round's answer, so the part is left to the next holder, whose asks read every finished call back
    // from the memo. Parts lost after every turn had finished are staged still: stagePart refuses one that was
    // taken over, and the answers are kept instead of being asked again.
    const cut = results.some((r) => r.turn.outcome === 'cancelled');
    if (options.signal?.aborted || (held.lost.aborted && cut)) signal.throwIfAborted();
    ctx.health = executor.durableHealth?.();
    // The live view sees the turns now; the committed log gets them with their parts (below), so with the round.
    await ctx.recorder.flush().catch(() => {});
    await stageParts(options, ctx, plan, claims, results, executor, held, tally);
  } catch (e) {
    if (!held.lost.aborted || options.signal?.aborted) throw e;
    options.logger?.warn({ runId: ctx.run.runId, round: plan.round }, String(held.lost.reason));
  } finally {
    held.stop();
    runtime.unsubscribe();
    await executor.stop().catch(() => {});
    // What no staged part took belongs to turns that are asked again (taken over, or this worker stops).
    ctx.recorder.clear();
    await ctx.recorder.flush().catch(() => {});
  }
  return tally.staged;
}

/** The runtime a batch of parts is asked on, and how to stop listening to it. */
interface PartsRuntime {
  readonly restore: Awaited<ReturnType<typeof loadRunRestore>>;
  readonly executor: BreakwaterExecutor;
  readonly unsubscribe: () => void;
}

/** A runtime restored from the last commit, its call memo fenced by the parts' leases, its events to the run's log. */
async function openPartsRuntime(
  options: RunWorkerOptions,
  store: RunStore,
  ctx: RunContext,
  plan: RoundPlan,
  claims: readonly PartClaim[],
): Promise<PartsRuntime> {
  const runId = ctx.run.runId;
  const restore = await loadRunRestore(store, runId, ctx.definitions, historyTurnsOf(ctx.spec));
  const memo = await storeCallMemo(store, runId, plan.round, ctx.clock, {
    keyFormat: keyFormatOf(ctx.run.config),
    // Fenced by the parts' leases: a write that would land after a takeover is refused, not read by nobody.
    write: (key, value) => rememberCallHeld(options.database, claims, key, value),
    answered: answeredCalls(ctx, plan.round),
  });
  const worker = claims[0]?.holder ?? 'worker';
  const executor = createBreakwaterExecutor({
    config: ctx.wire.withLease(ctx.spec.runtime) as RuntimeConfigInput,
    agents: [...ctx.definitions],
    clock: ctx.clock,
    memo,
    restored: restore.agents,
    ...(ctx.wire.createEngine ? { createEngine: ctx.wire.createEngine } : {}),
    ...(ctx.wire.byokWire ? { byokWire: ctx.wire.byokWire } : {}),
    ...(options.stream ? { stream: true, ...(options.onText ? { onText: options.onText } : {}) } : {}),
    coordination: {
      ...ctx.coordination,
      pool: ctx.workers.pool,
      leaseTtlMs: ctx.workers.leaseTtlMs,
      processId: worker,
    },
    ...(options.logger ? { logger: options.logger } : {}),
  });
  // The run's one log says which worker ran each agent and asked each turn (the live view and the replay show it).
  const send: RuntimeEventListener = (e) =>
    ctx.recorder.listener(
      e.type === 'agent.state' || e.type === 'turn.completed'
        ? ({ ...e, data: { ...e.data, worker } } as typeof e)
        : e,
    );
  return { restore, executor, unsubscribe: executor.subscribeEvents(send) };
}

/**
 * This worker's answered calls of the round, kept across its claims of it: a worker whose lease ran out while its
 * database was cut, and that claims the same part again, still has the answers whose memo writes never landed.
 */
function answeredCalls(ctx: RunContext, round: number): Map<string, unknown> {
  if (ctx.answered?.round !== round) ctx.answered = { round, calls: new Map() };
  return ctx.answered.calls;
}

/** Asks the claimed agents' turns of the round, each seeing the previous round's answers when the run says so. */
async function askParts(
  store: RunStore,
  ctx: RunContext,
  plan: RoundPlan,
  claims: readonly PartClaim[],
  executor: BreakwaterExecutor,
  signal: AbortSignal,
): Promise<AskedTurn[]> {
  const runId = ctx.run.runId;
  const mine = new Set(claims.map((c) => c.agent));
  const peers =
    (ctx.spec.rounds?.seePreviousRound ?? true) && ctx.spec.rounds && plan.round > 1
      ? await previousAnswers(store, runId, plan.round - 1)
      : new Map<string, PeerAnswer[]>();
  return askRoundTurns(
    { runId, executor, clock: ctx.clock, signal, keyFormat: keyFormatOf(ctx.run.config) },
    plan,
    plan.turns.filter((t) => mine.has(t.agent)),
    peers,
    ctx.plans.length,
  );
}

/** Stages each claimed part: its turns, its agent's state and its events; counts the staged turns in `tally`. */
async function stageParts(
  options: RunWorkerOptions,
  ctx: RunContext,
  plan: RoundPlan,
  claims: readonly PartClaim[],
  results: readonly AskedTurn[],
  executor: BreakwaterExecutor,
  held: HeldParts,
  tally: { staged: number },
): Promise<void> {
  const runId = ctx.run.runId;
  // The events naming no agent (an endpoint's breaker, a probe) go with the first part staged.
  let shared = true;
  for (const claim of claims) {
    held.release(claim);
    const turns: TurnInput[] = results
      .filter((r) => r.turn.agent === claim.agent)
      .map(({ itemId, key, turn, agentOrder }) => ({ ...toTurnInput(itemId, key, turn), agentOrder }));
    const persisted = executor.persistedSnapshot(claim.agent);
    const state: AgentStateInput | null =
      persisted === undefined
        ? null
        : { agent: claim.agent, machineVersion: AGENT_MACHINE_VERSION, ...durableAgentState(persisted) };
    // The part's events are staged with it: they reach the log with the round's commit, exactly as its turns.
    const events = ctx.recorder.take(claim.agent, shared);
    if (!(await stagePart(options.database, claim, turns, state, events))) {
      options.logger?.warn(
        { runId, round: plan.round, agent: claim.agent },
        'part taken over by another worker; dropped',
      );
      continue;
    }
    crashPoint('after-stage');
    shared = false;
    // The workers waiting at the round barrier go on now (the last part in lets one of them commit).
    await notifyRound(options.database, runId);
    tally.staged += turns.length;
    for (const t of turns)
      options.onTurn?.({
        runId,
        round: plan.round,
        agent: claim.agent,
        itemId: t.itemId,
        outcome: t.outcome,
        worker: claim.holder,
      });
  }
}
