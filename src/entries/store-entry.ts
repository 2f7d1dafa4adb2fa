/**
 * `breakwater/store`: the durable store (PostgreSQL through kysely, or embedded PGlite) where every round of a run
 * is committed exactly once, so a run resumes with its agents' whole context; and the shipped scenarios.
 *
 * @example
 * ```ts
 * import { createRunStore, openDatabase } from 'breakwater/store';
 * // PostgreSQL at DATABASE_URL, else PGlite in .breakwater/; migrated to the latest schema on open.
 * const database = await openDatabase({ url: process.env.DATABASE_URL });
 * const store = createRunStore(database);
 * console.log(await store.listRuns({ status: 'interrupted' }));
 * await database.close();
 * ```
 */
export {
  DEFAULT_DATA_DIR,
  IN_MEMORY,
  openDatabase,
  type BreakwaterDatabase,
  type DatabaseBackend,
  type OpenDatabaseOptions,
} from '../store/open-database.ts';
export {
  MIGRATION_LOCK_TABLE,
  MIGRATION_TABLE,
  migrateToLatest,
  type MigrateOptions,
} from '../store/migrate-to-latest.ts';
export { MIGRATION_NAMES, breakwaterMigrationProvider } from '../store/migration-provider.ts';
export { createRunStore, type RunStore, type RunStoreOptions } from '../store/run-store.ts';
export { agentStateSchema } from '../store/agent-state-schema.ts';
export {
  RoundCommitConflictError,
  isRoundCommitConflictError,
  type RoundCommitConflictReason,
} from '../store/round-commit-conflict-error.ts';
export {
  SnapshotRestoreError,
  isSnapshotRestoreError,
  type SnapshotRestoreReason,
} from '../store/snapshot-restore-error.ts';
export {
  MigrationError,
  RunExistsError,
  RunNotFoundError,
  StoreInputError,
  isMigrationError,
  isRunExistsError,
  isRunNotFoundError,
  isStoreInputError,
} from '../store/store-errors.ts';
export type { RunStatus, StoreSchema, TurnOutcome } from '../store/store-schema.ts';
export type {
  AgentStateInput,
  AgentStateRecord,
  CommitRoundInput,
  CreateRunInput,
  EventInput,
  LogEventInput,
  EventRecord,
  ListRunsOptions,
  LoadStatesOptions,
  ReadEventsOptions,
  RecentTurnsOptions,
  RememberCallInput,
  RoundRecord,
  RunRecord,
  StoreCallOptions,
  TurnInput,
  TurnRecord,
} from '../store/store-types.ts';
export {
  DatabaseUnavailableError,
  findDatabaseUnavailable,
  isDatabaseUnavailableError,
} from '../store/database-unavailable-error.ts';
export {
  RunLeaseHeldError,
  acquireRunLease,
  isRunLeaseHeldError,
  type RunLease,
  type RunLeaseOptions,
} from '../store/run-lease.ts';
export {
  DataDirInUseError,
  PGLITE_LOCK_FILE,
  isDataDirInUseError,
} from '../store/pglite-lock.ts';
export {
  IncompleteClusterError,
  isIncompleteClusterError,
  PGLITE_INIT_MARKER,
} from '../store/incomplete-cluster-error.ts';
export {
  TURN_KEY_FORMAT,
  escapeKeyPart,
  keyFormatOf,
  roundKeyPrefix,
  turnKey,
  type TurnKeyFormat,
  type TurnKeyParts,
} from '../store/turn-key.ts';
export { appendRunEvents, createLiveEventLog, type LiveEventLog } from '../store/event-log.ts';
export { listScenarios, loadScenario, parseScenario, resolveScenario } from '../scenarios/load-scenario.ts';
export type { ScenarioSpec } from '../scenarios/scenario-types.ts';
