import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import { AGENT_MACHINE_VERSION } from '../../../machines/agent.machine.ts';
import { createScaledClock, preciseWallNow, type ScaledClock } from '../../clock/scaled-clock.ts';
import type { RuntimeEventListener } from '../../core/runtime-event.ts';
import { durableAgentState } from '../../runtime/agent-snapshot.ts';
import type { AgentDefinition } from '../../runtime/agent-definition.ts';
import type { RuntimeConfigInput } from '../../runtime/runtime-config.ts';
import { createBreakwaterExecutor } from '../breakwater-executor.ts';
import type { PeerAnswer } from '../round-prompt.ts';
import { askRoundTurns, previousAnswers, toTurnInput } from '../round-runner.ts';
import { applyRunRestore, loadRunRestore } from '../run-restore.ts';
import { emulatorBaseURLs } from '../run-endpoints.ts';
import { historyTurnsOf, type StoredRunConfig, type StoredWorkersConfig } from '../run-scenario.ts';
import { storeCallMemo } from '../store-call-memo.ts';
import { loadScenario } from '../../scenarios/load-scenario.ts';
import { planRounds } from '../../scenarios/round-planner.ts';
import { scenarioRuntimeConfig } from '../../scenarios/scenario-endpoints.ts';
import { scenarioAgents } from '../../scenarios/scenario-tools.ts';
import type { RoundPlan, ScenarioSpec } from '../../scenarios/scenario-types.ts';
import { findDatabaseUnavailable } from '../../store/database-unavailable-error.ts';
import { isConnectCut } from '../../coordination/connect-ride-out.ts';
import type { BreakwaterDatabase } from '../../store/open-database.ts';
import { isRoundCommitConflictError } from '../../store/round-commit-conflict-error.ts';
import { createRunStore, type RunStore } from '../../store/run-store.ts';
import type { AgentStateInput, RunRecord, TurnInput } from '../../store/store-types.ts';
import { crashPoint } from '../../store/crash-point.ts';
import { keyFormatOf } from '../../store/turn-key.ts';
import type { CoordinationOptions } from '../../coordination/coordination-options.ts';
import { planWorkerCoordination, probeCoordination } from './worker-coordination.ts';
import { listenForRounds, notifyRound } from './round-wakeup.ts';
import { createWorkerEventRecorder, type WorkerEventRecorder } from './worker-event-recorder.ts';
import { holdParts, takeoverAfterMs } from './part-lease.ts';
import { claimPart, loadParts, type PartClaim, rememberCallHeld, stagePart } from './round-parts.ts';
import { type WireTimeEngines, wireTimeEngines } from '../wire-time-engines.ts';

/** What a worker did, turn by turn (the live output of `breakwater worker`). */
export interface WorkerTurnNote {
  readonly runId: string;
  readonly round: number;
  readonly agent: string;
  readonly itemId: string;
  readonly outcome: string;
  readonly worker: string;
}

/** Options of {@link runWorker}. */
export interface RunWorkerOptions {
  /** The run's PostgreSQL store (not closed by the worker). */
  readonly database: BreakwaterDatabase;
  /** The same database's URL: the global tokens and endpoint health are coordinated on it unless the run says otherwise. */
  readonly databaseUrl: string;
  /**
   * This worker's URL of the run's coordination backend (`--coordination-url`), to bring its credentials: it must
   * name the server the run coordinates on (else the run is refused, or skipped when working on any run).
   * Default: the URL stored with the run.
   */
  readonly coordinationUrl?: string;
  /** Work on this run only, and return once it is no longer running. Default: any run that has work, until `signal`. */
  readonly runId?: string;
  /** This worker's name in leases, the report and the live output. Default `host:pid:nonce`. */
  readonly holder?: string;
  /**
   * How often an idle worker looks for work when nothing woke it, real ms: a worker waiting at the round barrier is
   * woken by NOTIFY as soon as a part is staged or a round committed; this bounded poll covers what sends none (a
   * lease running out, a new run). Default 1 000, or 100 when the LISTEN connection could not be made.
   */
  readonly pollMs?: number;
  readonly logger?: Logger;
  /** Called after every turn this worker asked and staged. Default none. */
  readonly onTurn?: (note: WorkerTurnNote) => void;
  /** Called after every round this worker committed. Default none. */
  readonly onCommit?: (runId: string, round: number) => void;
  /**
   * Called once per run this worker joined (its scenario loaded, its coordination reached), before it claims any
   * part: a parent that started the worker knows from here on that it did not die at start. Default none.
   */
  readonly onJoin?: (runId: string, holder: string) => void;
  /** Stream every turn this worker asks (`agent.stream`): the same committed turns, `onText` sees the text grow. Default false. */
  readonly stream?: boolean;
  /** With `stream`: an agent's current text of its running turn, after every change; `''` when the turn ends. */
  readonly onText?: (agent: string, text: string) => void;
  readonly signal?: AbortSignal;
}

/** What {@link runWorker} did. */
export interface WorkerSummary {
  readonly holder: string;
  /** Turns asked and staged by this worker. */
  readonly turns: number;
  /** Rounds this worker committed (the one that saw the last part in). */
  readonly commits: number;
}

/** A joined run: its scenario, plans, runtime and clock, built once per worker. */
interface RunContext {
  readonly run: RunRecord;
  readonly workers: StoredWorkersConfig;
  readonly spec: ScenarioSpec;
  readonly plans: readonly RoundPlan[];
  readonly definitions: readonly AgentDefinition[];
  readonly clock: ScaledClock;
  /** The engine factories reading wall-time endpoints' (and BYOK keys') waits onto the run's clock. */
  readonly wire: WireTimeEngines;
  readonly recorder: WorkerEventRecorder;
  /** Where this worker shares the run's tokens and endpoint health (URL with its credentials). */
  readonly coordination: CoordinationOptions;
  /** The endpoints' health as this worker last saw it (committed with the rounds it commits). */
  health?: unknown;
}

/**
 * A worker process's loop (`breakwater worker`): joins runs spread over workers and, round after round, claims
 * agents' parts of the round (leases with a holder, an expiry and a generation), asks their turns, and stages
 * them. The round is committed by whichever worker sees every part staged — one statement with a
 * compare-and-set on `runs.current_round`, so exactly once. A worker killed mid-round stops renewing; its
 * parts are taken over once their leases ran out, and the new holder's asks read the calls that had finished
 * from the call memo, so no committed call is made twice.
 *
 * Each batch of parts runs on a runtime restored from the last committed round (agents' snapshots and memory,
 * endpoint health), with the global tokens and endpoint health coordinated where the run says (its PostgreSQL
 * store unless started with a coordination URL: PostgreSQL or Redis).
 *
 * @example
 * ```ts
 * const database = await openDatabase({ url });
 * await runWorker({ database, databaseUrl: url, signal });
 * ```
 */
export async function runWorker(options: RunWorkerOptions): Promise<WorkerSummary> {
  const holder = options.holder ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const store = createRunStore(options.database);
  const wakeup = await listenForRounds(options.databaseUrl);
  const pollMs = () => options.pollMs ?? (wakeup.listening ? 1_000 : 100);
  const summary = { holder, turns: 0, commits: 0 };
  const contexts = new Map<string, RunContext>();
  // Runs this worker cannot join (their scenario file is not on this machine, say): skipped, not fatal, unless
  // it was told to work on that run.
  const unjoinable = new Set<string>();
  /** When the database was first found unreachable in a row of failed steps (a connection cut: ridden out). */
  let lostSince: number | undefined;
  /** Per run: when joining it first failed on a lost connection, in a row of such failures. */
  const joinLostSince = new Map<string, number>();
  try {
    for (;;) {
      options.signal?.throwIfAborted();
      const since = wakeup.mark();
      try {
        const run = options.runId
          ? await store.getRun(options.runId)
          : await nextRun(options.database, unjoinable);
        if (run?.status !== 'running') {
          if (options.runId) return summary;
          await wakeup.wait(undefined, pollMs(), since, options.signal);
          continue;
        }
        let ctx = contexts.get(run.runId);
        if (!ctx) {
          try {
            ctx = await joinRun(options, run);
          } catch (e) {
            // A connection lost while joining (its store's, or its coordination's cut) is tried again within the
            // ride-out window, as a lost step is; only a refusal (no such scenario, not a workers run, another
            // coordination server…) or a fault outlasting the window is final: then the run is skipped for good.
            const since = joinLostSince.get(run.runId) ?? Date.now();
            if (
              isTransientJoinFailure(e) &&
              !options.signal?.aborted &&
              Date.now() - since <= DATABASE_RIDE_OUT_MS
            ) {
              joinLostSince.set(run.runId, since);
              options.logger?.warn(
                { runId: run.runId, problem: e instanceof Error ? e.message : String(e) },
                'could not join the run (a connection was lost); trying again',
              );
              await sleepUnlessAborted(DATABASE_RETRY_MS, options.signal);
              continue;
            }
            joinLostSince.delete(run.runId);
            if (options.runId) throw e;
            unjoinable.add(run.runId);
            options.logger?.error({ runId: run.runId, err: e }, 'cannot join this run; skipping it');
            continue;
          }
          joinLostSince.delete(run.runId);
          contexts.set(run.runId, ctx);
          options.onJoin?.(run.runId, holder);
        }
        const worked = await stepRound(options, store, ctx, holder, summary);
        lostSince = undefined;
        if (!worked) await wakeup.wait(run.runId, pollMs(), since, options.signal);
      } catch (e) {
        // A connection terminated (the server still up) is ridden out: the store's pool reconnects, parts this
        // worker could not stage are taken over when their leases run out, and their answered calls come back from
        // the call memo (written through the cut). Only a database gone for longer stops the worker.
        const lost = findDatabaseUnavailable(e);
        if (!lost || options.signal?.aborted) throw e;
        lostSince ??= Date.now();
        if (Date.now() - lostSince > DATABASE_RIDE_OUT_MS) throw e;
        options.logger?.warn({ problem: lost.problem }, 'the database connection was lost; reconnecting');
        await new Promise((resolve) => setTimeout(resolve, DATABASE_RETRY_MS));
      }
    }
  } finally {
    await wakeup.close();
    for (const ctx of contexts.values()) await ctx.recorder.flush().catch(() => {});
  }
}

/** How long a worker keeps trying while its database is unreachable before it stops, real ms. */
const DATABASE_RIDE_OUT_MS = 60_000;
/** Between two tries while the database is unreachable, real ms. */
const DATABASE_RETRY_MS = 1_000;

/**
 * True when joining failed because a connection was lost (the store's, or the coordination's cut while the server
 * stays up): worth joining again. Not a refusal: a scenario that does not load, a run not started for workers,
 * a coordination URL naming another server or refused, a bad password.
 */
export function isTransientJoinFailure(e: unknown): boolean {
  if (findDatabaseUnavailable(e)) return true;
  const seen = new Set<unknown>();
  for (
    let at = e;
    at !== null && typeof at === 'object' && !seen.has(at);
    at = (at as { cause?: unknown }).cause
  ) {
    seen.add(at);
    if (isConnectCut(at)) return true;
  }
  return false;
}

function sleepUnlessAborted(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The oldest running run spread over workers. */
async function nextRun(
  database: BreakwaterDatabase,
  skip: ReadonlySet<string>,
): Promise<RunRecord | undefined> {
  let query = database.db
    .selectFrom('runs')
    .select('run_id')
    .where('status', '=', 'running')
    .where(sql<boolean>`config -> 'workers' is not null`);
  if (skip.size > 0) query = query.where('run_id', 'not in', [...skip]);
  const row = await query.orderBy('created_at').executeTakeFirst();
  return row ? createRunStore(database).getRun(row.run_id) : undefined;
}

async function joinRun(options: RunWorkerOptions, run: RunRecord): Promise<RunContext> {
  const database = options.database;
  const config = run.config as StoredRunConfig | null;
  const workers = config?.workers;
  if (!config?.scenarioSource || !workers)
    throw new Error(`run "${run.runId}" was not started for workers (\`breakwater run --workers N\`)`);
  const coordination = planWorkerCoordination({
    runId: run.runId,
    stored: workers.coordination,
    databaseUrl: options.databaseUrl,
    override: options.coordinationUrl,
  });
  // Reached once before any part is claimed: an unreachable backend is one line, not a run of degraded turns.
  await probeCoordination(
    { ...coordination.options, pool: workers.pool },
    options.coordinationUrl !== undefined ? '--coordination-url' : `run ${run.runId}'s coordination`,
  );
  const scenario = loadScenario(config.scenarioSource);
  const scale = scenario.timeScale ?? 1;
  // Every worker's clock reads the run's origin at the same wall instant, so scheduled firings agree.
  const clock = createScaledClock({
    origin: workers.clockOrigin ?? config.origin,
    realStart: workers.wallStart,
    realNow: preciseWallNow,
    scale,
  });
  const baseURLs = await emulatorBaseURLs(
    scenario,
    workers.emulatorUrl ? { emulatorUrl: workers.emulatorUrl } : {},
    clock,
    () => {
      throw new Error(`run "${run.runId}" needs an emulator but stored none for its workers`);
    },
  );
  const runtime = scenarioRuntimeConfig(scenario, {
    baseURL: (flavor) => {
      const url = baseURLs[flavor];
      if (!url) throw new Error(`the emulator does not serve flavor "${flavor}"`);
      return url;
    },
  });
  const spec: ScenarioSpec = { ...scenario, runtime: runtime as ScenarioSpec['runtime'] };
  return {
    run,
    workers,
    spec,
    plans: planRounds(scenario, { origin: config.origin }),
    definitions: scenarioAgents(spec),
    clock,
    wire: wireTimeEngines(scenario.runtime, {
      clock,
      timeScale: scale,
      emulatorOnRunClock: workers.emulatorOnRunClock ?? true,
    }),
    recorder: createWorkerEventRecorder(database, run.runId),
    coordination: coordination.options,
  };
}

/**
 * One step on a run's next round: commits it when every part is staged; else claims up to this worker's share
 * of the parts nobody holds (or whose holder's lease ran out) and works them. False when there was nothing to do.
 */
async function stepRound(
  options: RunWorkerOptions,
  store: RunStore,
  ctx: RunContext,
  holder: string,
  summary: { turns: number; commits: number },
): Promise<boolean> {
  const runId = ctx.run.runId;
  const run = await store.getRun(runId);
  if (run?.status !== 'running') return false;
  const round = run.currentRound + 1;
  const plan = ctx.plans.find((p) => p.round === round);
  if (!plan) {
    await completeRun(options.database, store, runId);
    return true;
  }
  const agents = [...new Set(plan.turns.map((t) => t.agent))];
  const parts = await loadParts(options.database, runId, round);
  const staged = new Set(parts.filter((p) => p.done).map((p) => p.agent));
  if (agents.every((a) => staged.has(a))) {
    if (await commit(options.database, store, ctx, plan, parts, options.signal)) {
      summary.commits++;
      options.onCommit?.(runId, round);
    }
    return true;
  }
  const share = Math.max(1, Math.ceil(agents.length / Math.max(1, ctx.workers.count)));
  // Start from a place of this worker's own, so workers do not all race for the same first agents.
  const start = hash(holder) % agents.length;
  const order = [...agents.slice(start), ...agents.slice(0, start)].filter((a) => !staged.has(a));
  const claims: PartClaim[] = [];
  // Before the first claim: the leases end no sooner than this plus their TTL on the database's clock.
  const leaseFrom = Date.now();
  for (const agent of order) {
    if (claims.length >= share) break;
    const claim = await claimPart(options.database, {
      runId,
      round,
      agent,
      holder,
      ttlMs: ctx.workers.leaseTtlMs,
      takeoverAfterMs: takeoverAfterMs(ctx.workers.leaseTtlMs),
    });
    if (claim) claims.push(claim);
  }
  if (claims.length === 0) return false;
  summary.turns += await workParts(options, store, ctx, plan, claims, leaseFrom);
  return true;
}

/** Asks the claimed agents' turns of the round on a runtime restored from the last commit, and stages them. */
async function workParts(
  options: RunWorkerOptions,
  store: RunStore,
  ctx: RunContext,
  plan: RoundPlan,
  claims: readonly PartClaim[],
  leaseFrom: number,
): Promise<number> {
  const runId = ctx.run.runId;
  const ttl = ctx.workers.leaseTtlMs;
  const held = holdParts(options.database, claims, ttl, leaseFrom);
  const signal = options.signal ? AbortSignal.any([options.signal, held.lost]) : held.lost;
  let restore: Awaited<ReturnType<typeof loadRunRestore>>;
  let memo: Awaited<ReturnType<typeof storeCallMemo>>;
  try {
    restore = await loadRunRestore(store, runId, ctx.definitions, historyTurnsOf(ctx.spec));
    memo = await storeCallMemo(store, runId, plan.round, ctx.clock, {
      keyFormat: keyFormatOf(ctx.run.config),
      // Fenced by the parts' leases: a write that would land after a takeover is refused, not read by nobody.
      write: (key, value) => rememberCallHeld(options.database, claims, key, value),
    });
  } catch (e) {
    held.stop();
    throw e;
  }
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
      leaseTtlMs: ttl,
      processId: claims[0]?.holder ?? 'worker',
    },
    ...(options.logger ? { logger: options.logger } : {}),
  });
  // The run's one log says which worker ran each agent and asked each turn (the live view and the replay show it).
  const worker = claims[0]?.holder ?? 'worker';
  const send: RuntimeEventListener = (e) =>
    ctx.recorder.listener(
      e.type === 'agent.state' || e.type === 'turn.completed'
        ? ({ ...e, data: { ...e.data, worker } } as typeof e)
        : e,
    );
  const unsubscribe = executor.subscribeEvents(send);
  let staged = 0;
  try {
    applyRunRestore(executor.supervisor, restore);
    const mine = new Set(claims.map((c) => c.agent));
    const peers =
      (ctx.spec.rounds?.seePreviousRound ?? true) && ctx.spec.rounds && plan.round > 1
        ? await previousAnswers(store, runId, plan.round - 1)
        : new Map<string, PeerAnswer[]>();
    const results = await askRoundTurns(
      { runId, executor, clock: ctx.clock, signal, keyFormat: keyFormatOf(ctx.run.config) },
      plan,
      plan.turns.filter((t) => mine.has(t.agent)),
      peers,
      ctx.plans.length,
    );
    await executor.settle?.();
    // Stopped (or taken over) while asking: the turns cut short come back as failed ("cancelled before it
    // started"); staged, they would be committed as the round's answers. The part is left to the next holder,
    // whose asks read every finished call back from the memo.
    signal.throwIfAborted();
    ctx.health = executor.durableHealth?.();
    // The live view sees the turns now; the committed log gets them with their parts (below), so with the round.
    await ctx.recorder.flush().catch(() => {});
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
      if (await stagePart(options.database, claim, turns, state, events)) {
        crashPoint('after-stage');
        shared = false;
        // The workers waiting at the round barrier go on now (the last part in lets one of them commit).
        await notifyRound(options.database, runId);
        staged += turns.length;
        for (const t of turns)
          options.onTurn?.({
            runId,
            round: plan.round,
            agent: claim.agent,
            itemId: t.itemId,
            outcome: t.outcome,
            worker: claim.holder,
          });
      } else {
        options.logger?.warn(
          { runId, round: plan.round, agent: claim.agent },
          'part taken over by another worker; dropped',
        );
      }
    }
  } catch (e) {
    if (!held.lost.aborted || options.signal?.aborted) throw e;
    options.logger?.warn({ runId, round: plan.round }, String(held.lost.reason));
  } finally {
    held.stop();
    unsubscribe();
    await executor.stop().catch(() => {});
    // What no staged part took belongs to turns that are asked again (taken over, or this worker stops).
    ctx.recorder.clear();
    await ctx.recorder.flush().catch(() => {});
  }
  return staged;
}

/** Commits a round whose every part is staged; false when another worker committed it first. */
async function commit(
  database: BreakwaterDatabase,
  store: RunStore,
  ctx: RunContext,
  plan: RoundPlan,
  parts: Awaited<ReturnType<typeof loadParts>>,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const runId = ctx.run.runId;
  const turns = parts.flatMap((p) => p.turns ?? []);
  const states = parts.flatMap((p) => (p.state ? [p.state] : []));
  const counts: Record<string, number> = {};
  for (const t of turns) counts[t.outcome] = (counts[t.outcome] ?? 0) + 1;
  const workers: Record<string, number> = {};
  for (const p of parts) workers[p.holder] = (workers[p.holder] ?? 0) + (p.turns?.length ?? 0);
  // A worker that only commits (it asked none of the round's turns) carries the health committed last.
  const health = ctx.health !== undefined ? ctx.health : await store.lastHealth(runId);
  const done = {
    type: 'round.committed',
    at: ctx.clock.now(),
    data: { round: plan.round, turns: turns.length },
  } as const;
  // Every part's events, in time order (a stable sort keeps each worker's own order), then the commit's own.
  const events = [
    ...parts.flatMap((p) => p.events).sort((a, b) => a.at - b.at),
    { ...done, agent: null, endpoint: null },
  ];
  try {
    await store.commitRound(
      {
        runId,
        round: plan.round,
        turns,
        states,
        ...(health !== undefined && health !== null ? { health } : {}),
        summary: { counts, workers },
        events,
      },
      signal ? { signal } : {},
    );
  } catch (e) {
    if (isRoundCommitConflictError(e) && e.reason === 'already_committed') return false;
    throw e;
  }
  crashPoint('after-commit');
  await notifyRound(database, runId);
  ctx.recorder.echo(done);
  await ctx.recorder.flush();
  if (plan.round >= ctx.plans.length) {
    await completeRun(database, store, runId);
    const finished = {
      type: 'run.finished',
      at: ctx.clock.now(),
      data: { runId, status: 'completed' },
    } as const;
    // After the last commit: it describes no round, and this worker is the one that committed the last.
    await store.appendRunEvents(runId, [{ ...finished, agent: null, endpoint: null }]);
    ctx.recorder.echo(finished);
    await ctx.recorder.flush();
  }
  return true;
}

/**
 * Marks the run completed, then wakes the workers at its barrier. The commit's own notification is not enough: a
 * worker it woke may have read the run as still running and then, in its step, as completed, and would wait for a
 * next notification that nothing else sends (measured: 2 hangs in 59 two-worker runs under load).
 */
async function completeRun(database: BreakwaterDatabase, store: RunStore, runId: string): Promise<void> {
  await store.setRunStatus(runId, 'completed');
  await notifyRound(database, runId);
}

function hash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) >>> 0;
  return h;
}
