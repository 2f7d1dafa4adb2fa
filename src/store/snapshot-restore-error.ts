/**
 * Why a snapshot cannot be restored.
 *
 * @example
 * ```ts
 * if (isSnapshotRestoreError(e) && e.reason === 'machine_version_mismatch') console.error(e.storedVersion);
 * ```
 */
export type SnapshotRestoreReason =
  /** The stored JSON does not have the shape of an agent snapshot. */
  | 'corrupt'
  /** The snapshot was written by another version of the agent machine. */
  | 'machine_version_mismatch';

/**
 * `loadAgentStates` refused an agent's state. Nothing was changed in the database;
 * the run can be resumed once the cause is fixed (run the matching breakwater version) or restarted.
 *
 * @example
 * ```ts
 * try { await store.loadAgentStates(runId, { machineVersion: AGENT_MACHINE_VERSION }); }
 * catch (e) {
 *   if (isSnapshotRestoreError(e)) console.error(`${e.runId}/${e.agent}: ${e.reason}`);
 *   throw e;
 * }
 * ```
 */
export class SnapshotRestoreError extends Error {
  readonly code = 'SNAPSHOT_INVALID' as const;
  readonly runId: string;
  readonly agent: string;
  /** The round in which the refused state was last committed. */
  readonly round: number;
  readonly reason: SnapshotRestoreReason;
  /** For `machine_version_mismatch`: the version stored with the snapshot. */
  readonly storedVersion?: string;
  /** For `machine_version_mismatch`: the version the caller runs. */
  readonly expectedVersion?: string;
  constructor(opts: {
    runId: string;
    agent: string;
    round: number;
    reason: SnapshotRestoreReason;
    detail?: string;
    storedVersion?: string;
    expectedVersion?: string;
  }) {
    const where = `run "${opts.runId}", agent "${opts.agent}", round ${opts.round}`;
    const message =
      opts.reason === 'machine_version_mismatch'
        ? `cannot restore snapshot of ${where}: it was written by agent machine version "${opts.storedVersion}" but this runtime is "${opts.expectedVersion}"; resume it with the breakwater version that wrote it, or start a new run`
        : `cannot restore snapshot of ${where}: the stored data is corrupt (${opts.detail ?? 'wrong shape'}); the run cannot resume from it: start a new run, or repair the agent_states row`;
    super(message);
    this.name = 'SnapshotRestoreError';
    this.runId = opts.runId;
    this.agent = opts.agent;
    this.round = opts.round;
    this.reason = opts.reason;
    if (opts.storedVersion !== undefined) this.storedVersion = opts.storedVersion;
    if (opts.expectedVersion !== undefined) this.expectedVersion = opts.expectedVersion;
  }
}

/**
 * Type guard for {@link SnapshotRestoreError} (also matches by `code`, across module copies).
 *
 * @example
 * ```ts
 * if (isSnapshotRestoreError(e)) log.error({ run: e.runId, agent: e.agent }, e.message);
 * ```
 */
export function isSnapshotRestoreError(e: unknown): e is SnapshotRestoreError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'SNAPSHOT_INVALID';
}
