import type { BreakwaterDatabase } from '../../store/open-database.ts';
import { isRoundCommitConflictError } from '../../store/round-commit-conflict-error.ts';
import type { RunStore } from '../../store/run-store.ts';
import { crashPoint } from '../../store/crash-point.ts';
import type { RoundPlan } from '../../scenarios/scenario-types.ts';
import { notifyRound } from './round-wakeup.ts';
import type { loadParts } from './round-parts.ts';
import type { RunContext } from './worker-run-context.ts';

/** Commits a round whose every part is staged; false when another worker committed it first. */
export async function commitStagedRound(
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
export async function completeRun(
  database: BreakwaterDatabase,
  store: RunStore,
  runId: string,
): Promise<void> {
  await store.setRunStatus(runId, 'completed');
  await notifyRound(database, runId);
}
