/**
 * Why a round could not be committed.
 *
 * @example
 * ```ts
 * if (isRoundCommitConflictError(e) && e.reason === 'run_not_found') await store.createRun(input);
 * ```
 */
export type RoundCommitConflictReason =
  /** The round row exists already: someone committed this round before. */
  | 'already_committed'
  /** `runs.current_round` is not `round - 1`: a round is skipped or replayed. */
  | 'out_of_order'
  /** No run with this id. */
  | 'run_not_found';

/**
 * `commitRound` found the round already committed, out of order, or its run missing. The transaction
 * was rolled back: no turn, snapshot or round row was written and `current_round` is unchanged.
 *
 * A runtime that gets this after a crash or a race should reload (`getRun`, `loadLatestSnapshots`)
 * and continue from `currentRound + 1`, not retry the same commit.
 *
 * @example
 * ```ts
 * try { await store.commitRound({ runId, round: 3, turns, snapshots }); }
 * catch (e) {
 *   if (!isRoundCommitConflictError(e)) throw e;
 *   const run = await store.getRun(runId); // resume from run.currentRound + 1
 * }
 * ```
 */
export class RoundCommitConflictError extends Error {
  readonly code = 'ROUND_COMMIT_CONFLICT' as const;
  readonly runId: string;
  /** The round that was to be committed. */
  readonly round: number;
  /** The run's last committed round as seen at the conflict (`undefined` when the run is missing). */
  readonly currentRound: number | undefined;
  readonly reason: RoundCommitConflictReason;
  constructor(opts: {
    runId: string;
    round: number;
    currentRound: number | undefined;
    reason: RoundCommitConflictReason;
  }) {
    const detail =
      opts.reason === 'run_not_found'
        ? `run "${opts.runId}" does not exist; create it before committing rounds`
        : opts.reason === 'already_committed'
          ? `round ${opts.round} of run "${opts.runId}" is already committed (current round ${opts.currentRound}); reload the run and continue from round ${(opts.currentRound ?? 0) + 1}`
          : `round ${opts.round} of run "${opts.runId}" cannot follow current round ${opts.currentRound}; rounds commit in order, next is ${(opts.currentRound ?? 0) + 1}`;
    super(`round commit conflict: ${detail}`);
    this.name = 'RoundCommitConflictError';
    this.runId = opts.runId;
    this.round = opts.round;
    this.currentRound = opts.currentRound;
    this.reason = opts.reason;
  }
}

/**
 * Type guard for {@link RoundCommitConflictError} (also matches by `code`, across module copies).
 *
 * @example
 * ```ts
 * if (isRoundCommitConflictError(e) && e.reason === 'already_committed') skipTo(e.currentRound! + 1);
 * ```
 */
export function isRoundCommitConflictError(e: unknown): e is RoundCommitConflictError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'ROUND_COMMIT_CONFLICT';
}
