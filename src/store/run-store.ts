import type { Kysely } from 'kysely';
import { type Clock, systemClock } from '../clock/clock.ts';
import { agentStateMethods } from './agent-state-rows.ts';
import { callMemoMethods } from './call-memo-rows.ts';
import { eventLogMethods } from './event-log-rows.ts';
import type { BreakwaterDatabase } from './open-database.ts';
import type { CommittedStates } from './round-commit.ts';
import { roundMethods } from './round-rows.ts';
import { runMethods } from './run-rows.ts';
import type { RunStatus, StoreSchema } from './store-schema.ts';
import type {
  AgentStateRecord,
  CommitRoundInput,
  CreateRunInput,
  EventInput,
  EventRecord,
  ListRunsOptions,
  LogEventInput,
  LoadStatesOptions,
  ReadEventsOptions,
  RecentTurnsOptions,
  RememberCallInput,
  RoundRecord,
  RunRecord,
  StoreCallOptions,
  TurnRecord,
} from './store-types.ts';
import { turnMethods } from './turn-rows.ts';

/**
 * The runtime's durable state: runs, rounds committed exactly once, the call memo and the event log.
 * Plain data in and out, stored as given (build it from fields that cannot hold a key).
 *
 * @example
 * ```ts
 * const store = createRunStore(await openDatabase());
 * await store.createRun({ runId, scenario: 'monday-briefing', totalRounds: 3, machineVersion: 'agent@1' });
 * const memo = await store.recallCall(key) ?? await store.rememberCall({ runId, idempotencyKey: key, result: await engine.call(req) });
 * await store.commitRound({ runId, round: 1, turns, snapshots });
 * ```
 */
export interface RunStore {
  /**
   * Creates a run in status `running` with `currentRound` 0.
   * @throws {RunExistsError} when the id is taken
   * @example `await store.createRun({ runId: 'r-1', scenario: 'demo', totalRounds: 3, machineVersion: 'agent@1' })`
   */
  createRun(input: CreateRunInput, options?: StoreCallOptions): Promise<RunRecord>;
  /**
   * The run, or `undefined`.
   * @example `const next = ((await store.getRun('r-1'))?.currentRound ?? 0) + 1`
   */
  getRun(runId: string, options?: StoreCallOptions): Promise<RunRecord | undefined>;
  /**
   * Runs, newest first.
   * @example `const resumable = await store.listRuns({ status: 'interrupted' })`
   */
  listRuns(options?: ListRunsOptions): Promise<RunRecord[]>;
  /**
   * Sets the status; `finishedAt` is set for `completed`/`failed` and cleared otherwise; `failure` (one line)
   * is kept for `failed` and cleared otherwise.
   * @throws {RunNotFoundError}
   * @example `await store.setRunStatus('r-1', 'failed', { failure: 'OPENAI_API_KEY is not set' })`
   */
  setRunStatus(
    runId: string,
    status: RunStatus,
    options?: StoreCallOptions & { readonly failure?: string },
  ): Promise<RunRecord>;
  /**
   * Memoizes a successful call under its idempotency key, at once (not at round commit). Insert-or-ignore:
   * the value stored first wins and is returned to every caller, so two racers agree.
   * @returns the stored value (its JSON form)
   * @example `const result = await store.rememberCall({ runId, idempotencyKey: req.idempotencyKey, result: await engine.call(req) })`
   */
  rememberCall<T>(input: RememberCallInput<T>, options?: StoreCallOptions): Promise<T>;
  /**
   * The memoized result for a key, or `undefined`.
   * @example `const cached = await store.recallCall<EngineResult>(req.idempotencyKey)`
   */
  recallCall<T = unknown>(idempotencyKey: string, options?: StoreCallOptions): Promise<T | undefined>;
  /**
   * The memoized results among `keys`, keyed by idempotency key (missing keys are absent).
   * @example `const done = await store.recallCalls(turns.map((t) => t.key))`
   */
  recallCalls<T = unknown>(keys: readonly string[], options?: StoreCallOptions): Promise<Record<string, T>>;
  /**
   * Every memoized result of a run whose key starts with `prefix` (e.g. the round a crash interrupted:
   * `<runId>:<round>:`), keyed by idempotency key. One query: a resume reads its memo once, not per call.
   * @example `const memo = await store.recallCallsByPrefix(runId, \`${runId}:${round}:\`)`
   */
  recallCallsByPrefix<T = unknown>(
    runId: string,
    prefix: string,
    options?: StoreCallOptions,
  ): Promise<Map<string, T>>;
  /**
   * Commits a round in ONE statement: the round row with the endpoints' health, its turns (numbered in each
   * agent's order), the agents' state rows that changed since this store's last commit of the run (upserted),
   * the round's events (`events`, numbered after the run's last), and a compare-and-set of `runs.current_round` from `round - 1` to `round`. All or nothing.
   * @throws {RoundCommitConflictError} when the round is already committed, out of order or the run
   *   is missing — nothing is written
   * @throws {StoreInputError} on duplicate (itemId, agent) turns, duplicate agents, bad ids or numbers
   * @example `await store.commitRound({ runId, round: 2, turns, states, health, summary: { answered: 5 } })`
   */
  commitRound(input: CommitRoundInput, options?: StoreCallOptions): Promise<RoundRecord>;
  /**
   * Committed rounds of a run, in order.
   * @example `const rounds = await store.listRounds(runId)`
   */
  listRounds(runId: string, options?: StoreCallOptions): Promise<RoundRecord[]>;
  /**
   * Committed turns, by round then by the order they were committed in. `withPrompts: false` leaves each turn's
   * `prompt` out (`null`): a report reads answers, outcomes and usage, and a run's prompts can be tens of MB (every
   * agent's prompt repeats its item's text). Default `true`.
   * @example `const lastRound = await store.listTurns(runId, { round: run.currentRound })`
   */
  listTurns(
    runId: string,
    options?: StoreCallOptions & { readonly round?: number; readonly withPrompts?: boolean },
  ): Promise<TurnRecord[]>;
  /**
   * Per agent of the run, its state row, validated. Reads only.
   * @throws {SnapshotRestoreError} when a state is corrupt or from another machine version
   * @throws {RunNotFoundError}
   * @example `const byAgent = await store.loadAgentStates(runId, { machineVersion: AGENT_MACHINE_VERSION })`
   */
  loadAgentStates(runId: string, options: LoadStatesOptions): Promise<Record<string, AgentStateRecord>>;
  /**
   * Per agent, its last `limit` committed turns (optionally of some outcomes only), oldest first: one short
   * index scan per agent, however long the run.
   * @example `const window = (await store.recentTurns(runId, { agents: ['Kai'], limit: 6 }))['Kai']`
   */
  recentTurns(runId: string, options: RecentTurnsOptions): Promise<Record<string, TurnRecord[]>>;
  /**
   * The endpoints' health committed with the run's last round, or `undefined` (no round, or none stored).
   * @example `const health = await store.lastHealth(runId)`
   */
  lastHealth(runId: string, options?: StoreCallOptions): Promise<unknown>;
  /**
   * Appends events to the committed log in one statement, numbered after the run's last event: for what describes
   * no round (the run's start, its end after the last commit). A round's events go with its `commitRound`.
   * @example `await store.appendRunEvents(runId, [{ at: clock.now(), type: 'run.finished', data: { runId, status } }])`
   */
  appendRunEvents(runId: string, events: readonly LogEventInput[], options?: StoreCallOptions): Promise<void>;
  /**
   * Appends events with the caller's `seq` numbers in batched inserts (all of one call in one transaction).
   * @example `await store.appendEvents(runId, [{ seq: 1, at: clock.now(), type: 'COOLING', agent: 'analyst', endpoint: 'primary', data: { until } }])`
   */
  appendEvents(runId: string, events: readonly EventInput[], options?: StoreCallOptions): Promise<void>;
  /**
   * Events of a run in `seq` order, optionally after a seq, up to a time, at most `limit`.
   * @example `const page = await store.readEvents(runId, { afterSeq: lastSeen, limit: 500 })`
   */
  readEvents(runId: string, options?: ReadEventsOptions): Promise<EventRecord[]>;
}

/**
 * Options of {@link createRunStore}.
 *
 * @example
 * ```ts
 * createRunStore(database, { clock: createManualClock(0) });
 * ```
 */
export interface RunStoreOptions {
  /** Source of `created_at`/`updated_at`/`committed_at`. Default {@link systemClock}. */
  readonly clock?: Clock;
}

/**
 * Creates the {@link RunStore} over an open database (PGlite or PostgreSQL: same queries).
 *
 * @example
 * ```ts
 * const database = await openDatabase({ dataDir: ':memory:' });
 * const store = createRunStore(database, { clock: createManualClock(Date.parse('2026-08-17T07:00:00Z')) });
 * ```
 */
export function createRunStore(
  database: Pick<BreakwaterDatabase, 'db'>,
  options: RunStoreOptions = {},
): RunStore {
  const db: Kysely<StoreSchema> = database.db;
  const clock = options.clock ?? systemClock;
  const now = () => new Date(clock.now());
  const committedStates: CommittedStates = new Map();
  // One builder per table (runs, rounds, turns, agent states, call memo, event log), each given the parts it uses.
  return {
    ...callMemoMethods(db, now),
    ...eventLogMethods(db),
    ...runMethods(db, now),
    ...roundMethods(db, now, committedStates),
    ...turnMethods(db),
    ...agentStateMethods(db),
  };
}
