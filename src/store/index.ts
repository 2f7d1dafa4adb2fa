/**
 * breakwater's durable store: PostgreSQL JSONB through kysely, on PGlite (embedded default) or a
 * PostgreSQL server, with the same migrations and the same queries.
 */
export {
  DEFAULT_DATA_DIR,
  IN_MEMORY,
  openDatabase,
  type BreakwaterDatabase,
  type DatabaseBackend,
  type OpenDatabaseOptions,
} from './open-database.ts';
export {
  MIGRATION_LOCK_TABLE,
  MIGRATION_TABLE,
  migrateToLatest,
  type MigrateOptions,
} from './migrate-to-latest.ts';
export { MIGRATION_NAMES, breakwaterMigrationProvider } from './migration-provider.ts';
export { createRunStore, type RunStore, type RunStoreOptions } from './run-store.ts';
export { agentStateSchema } from './agent-state-schema.ts';
export {
  RoundCommitConflictError,
  isRoundCommitConflictError,
  type RoundCommitConflictReason,
} from './round-commit-conflict-error.ts';
export {
  SnapshotRestoreError,
  isSnapshotRestoreError,
  type SnapshotRestoreReason,
} from './snapshot-restore-error.ts';
export {
  MigrationError,
  RunExistsError,
  RunNotFoundError,
  StoreInputError,
  isMigrationError,
  isRunExistsError,
  isRunNotFoundError,
  isStoreInputError,
} from './store-errors.ts';
export type { RunStatus, StoreSchema, TurnOutcome } from './store-schema.ts';
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
} from './store-types.ts';
export {
  DatabaseUnavailableError,
  findDatabaseUnavailable,
  isDatabaseUnavailableError,
} from './database-unavailable-error.ts';
export {
  RunLeaseHeldError,
  acquireRunLease,
  isRunLeaseHeldError,
  type RunLease,
  type RunLeaseOptions,
} from './run-lease.ts';
export {
  DataDirInUseError,
  PGLITE_LOCK_FILE,
  isDataDirInUseError,
} from './pglite-lock.ts';
export {
  IncompleteClusterError,
  isIncompleteClusterError,
  PGLITE_INIT_MARKER,
} from './incomplete-cluster-error.ts';
export {
  TURN_KEY_FORMAT,
  escapeKeyPart,
  keyFormatOf,
  roundKeyPrefix,
  turnKey,
  type TurnKeyFormat,
  type TurnKeyParts,
} from './turn-key.ts';
export { appendRunEvents, createLiveEventLog, type LiveEventLog } from './event-log.ts';
