import type { RunStore } from '../store/run-store.ts';
import { RunNotFoundError } from '../store/store-errors.ts';
import { type RunReportOptions, buildRunReport } from './run-report.ts';
import type { RunReport } from './report-types.ts';
import { eventsFromRecords } from '../core/stored-event.ts';

/**
 * Options of {@link loadRunReport}: those of `buildRunReport` (the turns are read from the store).
 *
 * @example
 * ```ts
 * const options: LoadRunReportOptions = { analysisTiers: ['analysis'], signal: AbortSignal.timeout(10_000) };
 * ```
 */
export interface LoadRunReportOptions extends Omit<RunReportOptions, 'turns'> {
  /** Aborts between the store reads. Default none. */
  readonly signal?: AbortSignal;
}

/**
 * Reads a run, its event log and its stored turns from the store and builds its report — what the
 * round runner prints at the end of a run and `breakwater report <run-id>` prints later.
 *
 * @throws {RunNotFoundError} when the store has no run with this id
 * @example
 * ```ts
 * const report = await loadRunReport(createRunStore(database), runId);
 * for (const line of formatRunReport(report)) console.log(line);
 * ```
 */
export async function loadRunReport(
  store: RunStore,
  runId: string,
  options: LoadRunReportOptions = {},
): Promise<RunReport> {
  const { signal, ...reportOptions } = options;
  const call = signal ? { signal } : {};
  const run = await store.getRun(runId, call);
  if (!run) throw new RunNotFoundError(runId);
  // Answers, outcomes and usage only: the prompts of a large run are tens of MB the report never reads.
  const [records, turns] = await Promise.all([
    store.readEvents(runId, call),
    store.listTurns(runId, { ...call, withPrompts: false }),
  ]);
  return buildRunReport(run, eventsFromRecords(records), { ...reportOptions, turns });
}
