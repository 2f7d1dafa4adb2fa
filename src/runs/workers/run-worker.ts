import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { isConnectCut } from '../../coordination/connect-ride-out.ts';
import { findDatabaseUnavailable } from '../../store/database-unavailable-error.ts';
import type { BreakwaterDatabase } from '../../store/open-database.ts';
import { createRunStore, type RunStore } from '../../store/run-store.ts';
import type { RunRecord } from '../../store/store-types.ts';
import { commitStagedRound, completeRun } from './commit-round.ts';
import { takeoverAfterMs } from './part-lease.ts';
import { claimPart, loadParts, type PartClaim } from './round-parts.ts';
import { listenForRounds } from './round-wakeup.ts';
import type { RunWorkerOptions, WorkerSummary } from './run-worker-options.ts';
import { workParts } from './work-parts.ts';
import { joinRun, type RunContext } from './worker-run-context.ts';

export type { RunWorkerOptions, WorkerSummary, WorkerTurnNote } from './run-worker-options.ts';

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
    if (await commitStagedRound(options.database, store, ctx, plan, parts, options.signal)) {
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
  const leaseFrom = performance.now();
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

function hash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) >>> 0;
  return h;
}
