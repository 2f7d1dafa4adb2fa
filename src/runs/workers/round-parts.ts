import { sql } from 'kysely';
import type { BreakwaterDatabase } from '../../store/open-database.ts';
import { encodeJson } from '../../store/store-codec.ts';
import type { AgentStateInput, LogEventInput, TurnInput } from '../../store/store-types.ts';

/** A claimed part: one agent's turns of one round, held by this worker until staged or its lease runs out. */
export interface PartClaim {
  readonly runId: string;
  readonly round: number;
  readonly agent: string;
  readonly holder: string;
  /** Grows with every takeover: a stage carrying an older one is refused (fencing). */
  readonly generation: number;
}

/** A part as stored. */
export interface RoundPart {
  readonly agent: string;
  readonly holder: string;
  readonly generation: number;
  readonly done: boolean;
  readonly turns: readonly TurnInput[] | null;
  readonly state: AgentStateInput | null;
  /** The worker's events of the part, staged with it (committed with the round). */
  readonly events: readonly LogEventInput[];
}

type Db = Pick<BreakwaterDatabase, 'db'>;

const ttl = (ms: number) => sql`now() + make_interval(secs => ${ms / 1000})`;

/**
 * Claims an agent's part of a round: inserts its row, or takes over a part whose holder's lease ran out at least
 * `takeoverAfterMs` ago (a compare-and-set that bumps the generation, under the row's lock, so two takers cannot
 * both win). The database's clock decides expiry, so every worker agrees. `undefined` when another worker holds it
 * (or held it too recently), or it is staged.
 *
 * Why the wait after expiry: a holder cut off from the database (its connections terminated) may have answers
 * in hand whose memo writes are still being tried; a new holder that read the memo before they landed would ask,
 * and pay for, those calls again. The old holder stops asking once its lease may have run out, so waiting out its
 * memo writes' retry window is enough (see `takeoverAfterMs` in run-worker.ts).
 *
 * @example
 * ```ts
 * const claim = await claimPart(database, { runId, round: 2, agent: 'Kai', holder, ttlMs: 5_000, takeoverAfterMs: 17_000 });
 * ```
 */
export async function claimPart(
  database: Db,
  part: {
    runId: string;
    round: number;
    agent: string;
    holder: string;
    ttlMs: number;
    takeoverAfterMs: number;
  },
): Promise<PartClaim | undefined> {
  const { rows } = await sql<{ generation: number }>`
    insert into round_parts (run_id, round, agent, holder, generation, expires_at)
    values (${part.runId}, ${part.round}, ${part.agent}, ${part.holder}, 1, ${ttl(part.ttlMs)})
    on conflict (run_id, round, agent) do update
      set holder = excluded.holder, generation = round_parts.generation + 1, expires_at = excluded.expires_at
      where not round_parts.done
        and round_parts.expires_at < now() - make_interval(secs => ${part.takeoverAfterMs / 1000})
    returning generation
  `.execute(database.db);
  const row = rows[0];
  return row
    ? {
        runId: part.runId,
        round: part.round,
        agent: part.agent,
        holder: part.holder,
        generation: Number(row.generation),
      }
    : undefined;
}

/**
 * Pushes the lease of every part `holder` works on forward (its heartbeat). A part already taken over is not
 * touched: the compare-and-set is on holder and generation. Resolves with the claims that are no longer this
 * worker's (taken over after its lease ran out): it must stop working on them.
 *
 * @example
 * ```ts
 * const lost = await renewParts(database, claims, 5_000);
 * if (lost.length > 0) controller.abort();
 * ```
 */
export async function renewParts(
  database: Db,
  claims: readonly PartClaim[],
  ttlMs: number,
): Promise<PartClaim[]> {
  const lost: PartClaim[] = [];
  for (const c of claims) {
    const result = await database.db
      .updateTable('round_parts')
      .set({ expires_at: ttl(ttlMs) as never })
      .where('run_id', '=', c.runId)
      .where('round', '=', c.round)
      .where('agent', '=', c.agent)
      .where('holder', '=', c.holder)
      .where('generation', '=', c.generation)
      .where('done', '=', false)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) lost.push(c);
  }
  return lost;
}

/**
 * Stages a claimed part: its turns, the agent's state after them and the worker's events of them (in the same
 * statement: they reach the log with the round's commit, exactly when the turns do). Refused (false) when the claim is no longer
 * this worker's (taken over after its lease ran out) or the part is staged already: a part is staged once.
 *
 * @example
 * ```ts
 * if (!(await stagePart(database, claim, turns, state, events))) console.warn('taken over; dropped');
 * ```
 */
export async function stagePart(
  database: Db,
  claim: PartClaim,
  turns: readonly TurnInput[],
  state: AgentStateInput | null,
  events: readonly LogEventInput[] = [],
): Promise<boolean> {
  const result = await database.db
    .updateTable('round_parts')
    .set({
      done: true,
      turns: JSON.stringify(turns),
      state: state === null ? null : JSON.stringify(state),
      events: JSON.stringify(events),
    })
    .where('run_id', '=', claim.runId)
    .where('round', '=', claim.round)
    .where('agent', '=', claim.agent)
    .where('holder', '=', claim.holder)
    .where('generation', '=', claim.generation)
    .where('done', '=', false)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * The parts of a round, claimed or staged.
 *
 * @example
 * ```ts
 * const parts = await loadParts(database, runId, 2);
 * ```
 */
export async function loadParts(database: Db, runId: string, round: number): Promise<RoundPart[]> {
  const rows = await database.db
    .selectFrom('round_parts')
    .select(['agent', 'holder', 'generation', 'done', 'turns', 'state', 'events'])
    .where('run_id', '=', runId)
    .where('round', '=', round)
    .orderBy('agent')
    .execute();
  return rows.map((r) => ({
    agent: r.agent,
    holder: r.holder,
    generation: Number(r.generation),
    done: r.done,
    turns: (r.turns as TurnInput[] | null) ?? null,
    state: (r.state as AgentStateInput | null) ?? null,
    events: (r.events as LogEventInput[] | null) ?? [],
  }));
}

/**
 * Turns staged (and so committed, once their round is) per worker: which worker did what.
 *
 * @example
 * ```ts
 * const byWorker = await turnsByWorker(database, runId); // { 'host:123:ab': 14, … }
 * ```
 */
export async function turnsByWorker(database: Db, runId: string): Promise<Record<string, number>> {
  const { rows } = await sql<{ holder: string; n: string | number }>`
    select p.holder, sum(jsonb_array_length(p.turns)) as n
    from round_parts p join runs r on r.run_id = p.run_id
    where p.run_id = ${runId} and p.done and p.round <= r.current_round
    group by p.holder order by p.holder
  `.execute(database.db);
  return Object.fromEntries(rows.map((r) => [r.holder, Number(r.n)]));
}

/** Thrown when a memo write is refused because the worker no longer holds its parts. */
export class PartsTakenOverError extends Error {
  readonly code = 'BW_PARTS_TAKEN_OVER';
  constructor(key: string) {
    super(
      `the memo of "${key}" was not written: its part was taken over by another worker (it asks the call again)`,
    );
    this.name = 'PartsTakenOverError';
  }
}

export function isPartsTakenOverError(e: unknown): e is PartsTakenOverError {
  return e instanceof Error && (e as { code?: unknown }).code === 'BW_PARTS_TAKEN_OVER';
}

/**
 * Writes a finished call's result to the memo only while `claims` are all still this worker's, in one statement:
 * the parts' rows are read FOR SHARE, so the write and a takeover's claim (which updates those rows) are ordered.
 * Either the write commits first, and the new holder, which reads the memo after its claim, sees it; or the claim
 * commits first, and the write is refused (PartsTakenOverError) instead of landing unseen after the new holder
 * read the memo and asked the call again. First write wins, as in the run store's `rememberCall`.
 *
 * @example
 * ```ts
 * await rememberCallHeld(database, claims, `${turnKey}:call0`, result);
 * ```
 */
export async function rememberCallHeld(
  database: Db,
  claims: readonly PartClaim[],
  key: string,
  result: unknown,
): Promise<void> {
  const [first] = claims;
  if (!first) throw new PartsTakenOverError(key);
  const agents = claims.map((c) => c.agent);
  const generations = claims.map((c) => c.generation);
  const { rows } = await sql<{ held: number; written: boolean }>`
    with held as (
      select agent from round_parts
      where run_id = ${first.runId} and round = ${first.round} and holder = ${first.holder} and not done
        and (agent, generation) in (select * from unnest(${agents}::text[], ${generations}::int[]))
      for share
    ), written as (
      insert into call_results (idempotency_key, run_id, result, created_at)
      select ${key}, ${first.runId}, ${encodeJson('rememberCallHeld', 'result', result)}::jsonb, now()
      where (select count(*) from held) = ${claims.length}
      on conflict (idempotency_key) do nothing
      returning 1
    )
    select (select count(*) from held)::int as held, exists (select 1 from written) as written
  `.execute(database.db);
  const row = rows[0];
  if (!row || Number(row.held) !== claims.length) throw new PartsTakenOverError(key);
}
