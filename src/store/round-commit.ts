import { type Kysely, sql } from 'kysely';
import { logEventRows } from './event-log.ts';
import { RoundCommitConflictError } from './round-commit-conflict-error.ts';
import {
  INT4_MAX,
  TURN_OUTCOMES,
  encodeJson,
  optionalId,
  requireId,
  requireInt,
  requireOneOf,
  toRoundRecord,
} from './store-codec.ts';
import { StoreInputError } from './store-errors.ts';
import type { StoreSchema } from './store-schema.ts';
import type { AgentStateInput, CommitRoundInput, RoundRecord, TurnInput } from './store-types.ts';

/**
 * The state rows a store committed last, per run and agent, as JSON text: a state equal to it is not written
 * again. Only filled after a commit succeeded, so a failed commit never hides a change.
 */
export type CommittedStates = Map<string, Map<string, string>>;

const OP = 'commitRound';

/**
 * Characters of JSON one commit statement carries at most; a larger round is written in parts (see
 * {@link commitRoundStatement}). A round of a few hundred ordinary turns is far below it: one statement.
 */
export const ROUND_PART_BYTES = 1_048_576;

/**
 * Commits one round as ONE SQL statement (so one round trip and one WAL flush, whatever the backend): the
 * compare-and-set of `runs.current_round`, the round row with the endpoints' health, its turns numbered in each
 * agent's order, the agents' state rows that changed (upserted), and the round's events appended to the log
 * (numbered after the run's last: commits of a run are serialized by the compare-and-set, and the commit of round
 * r + 1 starts only once r's is visible, so the statement reads the true last number). Every document travels in one JSON
 * parameter, encoded once; the data-modifying CTEs all hang off the compare-and-set, so a lost race writes
 * nothing. A round whose documents exceed `partBytes` of JSON is written as several statements in one transaction
 * (the first one the compare-and-set), so that the database never holds more than one part's documents at once.
 * Nothing is validated beyond ids and numbers here: state rows are checked when they are loaded.
 *
 * @throws {RoundCommitConflictError} the round is committed already, out of order, or the run is missing
 * @throws {StoreInputError} on a malformed turn or a repeated (item, agent) / agent
 */
export async function commitRoundStatement(
  db: Kysely<StoreSchema>,
  input: CommitRoundInput,
  committedAt: Date,
  committed: CommittedStates,
  signal: AbortSignal | undefined,
  partBytes = ROUND_PART_BYTES,
): Promise<RoundRecord> {
  signal?.throwIfAborted();
  const runId = requireId(OP, 'runId', input.runId);
  const round = requireInt(OP, 'round', input.round, 1, INT4_MAX);
  if (!Array.isArray(input.turns))
    throw new StoreInputError({ operation: OP, field: 'turns', message: 'must be an array' });
  const states = input.states ?? [];
  if (!Array.isArray(states))
    throw new StoreInputError({ operation: OP, field: 'states', message: 'must be an array' });
  const events = input.events ?? [];
  if (!Array.isArray(events))
    throw new StoreInputError({ operation: OP, field: 'events', message: 'must be an array' });

  const turns = input.turns.map((t, i) => turnRow(t, i));
  checkUniqueTurns(turns);
  const known = committed.get(runId);
  const changed: [string, string][] = [];
  const agents = new Set<string>();
  states.forEach((s, i) => {
    const agent = requireId(OP, `states[${i}].agent`, s.agent);
    if (agents.has(agent)) {
      throw new StoreInputError({
        operation: OP,
        field: `states[${i}]`,
        message: `repeats agent "${agent}"; a round holds one state per agent`,
      });
    }
    agents.add(agent);
    const text = stateText(s, i, agent);
    if (known?.get(agent) !== text) changed.push([agent, text]);
  });
  // Each document is encoded once, on its own and only when its part is written, so a large round is cut into parts
  // between documents and only a part's JSON is held at a time. Turns in (agent order, position) order: every part
  // then holds each agent's turns after those of the parts before it, so numbering them from the agent's last stored
  // turn gives the numbers one statement would.
  const ordered = [...turns].sort((a, b) => a.agent_order - b.agent_order || a.position - b.position);
  const eventRows = logEventRows(OP, events);
  function* documents(): Generator<RoundDocument> {
    for (const t of ordered) yield ['turns', encodeJson(OP, `turns[${t.position}]`, t)];
    for (const [, text] of changed) yield ['states', text];
    for (const [i, e] of eventRows.entries()) yield ['events', encodeJson(OP, `events[${i}]`, e)];
  }
  const parts = splitIntoParts(documents(), partBytes);
  const health = encodeJson(OP, 'health', input.health ?? null);
  const summary = encodeJson(OP, 'summary', input.summary ?? null);
  const head = parts.next().value!;
  const second = parts.next();

  signal?.throwIfAborted();
  let row: CommittedRoundRow | undefined;
  if (second.done) {
    row = await firstPart(db, payloadOf(head, health, summary), runId, round, committedAt);
    if (!row) throw await conflict(db, runId, round);
  } else {
    // A round larger than one part is written as several statements in ONE transaction: still all or nothing, and
    // the database holds one part's documents at a time (PGlite's memory grew to ~8× a statement's JSON and kept it).
    const lost = new Error('round not committed');
    try {
      row = await db.transaction().execute(async (trx) => {
        const first = await firstPart(trx, payloadOf(head, health, summary), runId, round, committedAt);
        if (!first) throw lost;
        for (
          let part: RoundDocuments | undefined = second.value;
          part;
          part = parts.next().value ?? undefined
        ) {
          signal?.throwIfAborted();
          await nextPart(trx, payloadOf(part, 'null', 'null'), runId, round);
        }
        return first;
      });
    } catch (e) {
      if (e === lost) throw await conflict(db, runId, round);
      throw e;
    }
  }
  let mine = known;
  if (!mine) {
    mine = new Map();
    committed.set(runId, mine);
  }
  for (const [agent, text] of changed) mine.set(agent, text);
  return toRoundRecord(row!);
}

interface CommittedRoundRow {
  run_id: string;
  round: number;
  committed_at: Date;
  summary: unknown;
  health: unknown;
}

/** Encoded documents of a round (or of one part of it). */
interface RoundDocuments {
  readonly turns: readonly string[];
  readonly states: readonly string[];
  readonly events: readonly string[];
}

/** One encoded document and where it goes. */
export type RoundDocument = readonly [kind: keyof RoundDocuments, json: string];

/**
 * Cuts a round's documents, as they come, into parts of at most `partBytes` characters of JSON each (a document
 * larger than that is a part of its own); a part is yielded once the next document does not fit, so only one part's
 * documents are held. Always at least one part (empty for no documents).
 */
export function* splitIntoParts(
  docs: Iterable<RoundDocument>,
  partBytes: number,
): Generator<RoundDocuments, void, undefined> {
  let current = { turns: [] as string[], states: [] as string[], events: [] as string[] };
  let size = 0;
  for (const [kind, doc] of docs) {
    if (size > 0 && size + doc.length > partBytes) {
      yield current;
      current = { turns: [], states: [], events: [] };
      size = 0;
    }
    current[kind].push(doc);
    size += doc.length + 1;
  }
  yield current;
}

function payloadOf(part: RoundDocuments, health: string, summary: string): string {
  return (
    `{"turns":[${part.turns.join(',')}],"states":[${part.states.join(',')}],` +
    `"health":${health},"summary":${summary},"events":[${part.events.join(',')}]}`
  );
}

/**
 * The compare-and-set of `runs.current_round`, the round row, and the first part's turns, states and events; nothing
 * when the compare-and-set fails (the data-modifying CTEs all hang off it).
 */
async function firstPart(
  db: Kysely<StoreSchema>,
  payload: string,
  runId: string,
  round: number,
  committedAt: Date,
): Promise<CommittedRoundRow | undefined> {
  const result = await sql<CommittedRoundRow>`
    with p as (select ${payload}::jsonb as j),
    cas as (
      update runs set current_round = ${round}, updated_at = ${committedAt}
      where run_id = ${runId} and current_round = ${round - 1}
      returning machine_version
    ),
    rnd as (
      insert into rounds (run_id, round, committed_at, summary, health)
      select ${runId}, ${round}, ${committedAt}, p.j->'summary', p.j->'health' from cas, p
      returning run_id, round, committed_at, summary, health
    ),
    x as (
      select r.*, row_number() over (partition by r.agent order by r.agent_order, r.position) as n
      from p, jsonb_to_recordset(p.j->'turns') as r(
        item_id text, agent text, agent_order integer, position integer, prompt jsonb, answer jsonb,
        outcome text, endpoint_id text, degraded boolean, usage jsonb, faults jsonb, wait_ms integer,
        idempotency_key text)
    ),
    t as (
      insert into turns (run_id, round, item_id, agent, agent_seq, position, prompt, answer, outcome,
                         endpoint_id, degraded, usage, faults, wait_ms, idempotency_key)
      select rnd.run_id, rnd.round, x.item_id, x.agent,
             coalesce((select max(o.agent_seq) from turns o where o.run_id = rnd.run_id and o.agent = x.agent), 0) + x.n,
             x.position, x.prompt, x.answer, x.outcome, x.endpoint_id, x.degraded, x.usage, x.faults, x.wait_ms,
             x.idempotency_key
      from rnd, x
      returning 1
    ),
    s as (
      insert into agent_states (run_id, agent, machine_version, snapshot, slots, tool_results, last_round)
      select rnd.run_id, y.agent, coalesce(y.machine_version, cas.machine_version), y.snapshot, y.slots,
             y.tool_results, rnd.round
      from rnd, cas, p, jsonb_to_recordset(p.j->'states') as y(
        agent text, machine_version text, snapshot jsonb, slots jsonb, tool_results jsonb)
      on conflict (run_id, agent) do update set
        machine_version = excluded.machine_version, snapshot = excluded.snapshot, slots = excluded.slots,
        tool_results = excluded.tool_results, last_round = excluded.last_round
      returning 1
    ),
    ev as (
      insert into events (run_id, seq, at, type, agent, endpoint, data)
      select rnd.run_id, coalesce((select max(o.seq) from events o where o.run_id = rnd.run_id), 0) + e.n,
             (e.v->>'at')::bigint, e.v->>'type', e.v->>'agent', e.v->>'endpoint', coalesce(e.v->'data', '{}'::jsonb)
      from rnd, p, jsonb_array_elements(p.j->'events') with ordinality as e(v, n)
      returning 1
    )
    select rnd.*, (select count(*) from t) as turns, (select count(*) from s) as states,
           (select count(*) from ev) as events
    from rnd
  `.execute(db);
  return result.rows[0];
}

/**
 * A later part of a round written in parts, in the transaction whose first part committed the round row: its turns
 * numbered after the agents' turns stored so far (the earlier parts' included), its states, its events after the
 * run's last.
 */
async function nextPart(
  db: Kysely<StoreSchema>,
  payload: string,
  runId: string,
  round: number,
): Promise<void> {
  await sql`
    with p as (select ${payload}::jsonb as j),
    x as (
      select r.*, row_number() over (partition by r.agent order by r.agent_order, r.position) as n
      from p, jsonb_to_recordset(p.j->'turns') as r(
        item_id text, agent text, agent_order integer, position integer, prompt jsonb, answer jsonb,
        outcome text, endpoint_id text, degraded boolean, usage jsonb, faults jsonb, wait_ms integer,
        idempotency_key text)
    ),
    t as (
      insert into turns (run_id, round, item_id, agent, agent_seq, position, prompt, answer, outcome,
                         endpoint_id, degraded, usage, faults, wait_ms, idempotency_key)
      select ${runId}, ${round}, x.item_id, x.agent,
             coalesce((select max(o.agent_seq) from turns o where o.run_id = ${runId} and o.agent = x.agent), 0) + x.n,
             x.position, x.prompt, x.answer, x.outcome, x.endpoint_id, x.degraded, x.usage, x.faults, x.wait_ms,
             x.idempotency_key
      from x
      returning 1
    ),
    s as (
      insert into agent_states (run_id, agent, machine_version, snapshot, slots, tool_results, last_round)
      select ${runId}, y.agent, coalesce(y.machine_version, r.machine_version), y.snapshot, y.slots,
             y.tool_results, ${round}
      from runs r, p, jsonb_to_recordset(p.j->'states') as y(
        agent text, machine_version text, snapshot jsonb, slots jsonb, tool_results jsonb)
      where r.run_id = ${runId}
      on conflict (run_id, agent) do update set
        machine_version = excluded.machine_version, snapshot = excluded.snapshot, slots = excluded.slots,
        tool_results = excluded.tool_results, last_round = excluded.last_round
      returning 1
    ),
    ev as (
      insert into events (run_id, seq, at, type, agent, endpoint, data)
      select ${runId}, coalesce((select max(o.seq) from events o where o.run_id = ${runId}), 0) + e.n,
             (e.v->>'at')::bigint, e.v->>'type', e.v->>'agent', e.v->>'endpoint', coalesce(e.v->'data', '{}'::jsonb)
      from p, jsonb_array_elements(p.j->'events') with ordinality as e(v, n)
      returning 1
    )
    select (select count(*) from t) as turns, (select count(*) from s) as states, (select count(*) from ev) as events
  `.execute(db);
}

type TurnRow = ReturnType<typeof turnRow>;

function turnRow(t: TurnInput, i: number) {
  const f = (name: string) => `turns[${i}].${name}`;
  if (t.faults !== undefined && !Array.isArray(t.faults)) {
    throw new StoreInputError({ operation: OP, field: f('faults'), message: 'must be an array of faults' });
  }
  return {
    item_id: requireId(OP, f('itemId'), t.itemId),
    agent: requireId(OP, f('agent'), t.agent),
    agent_order: t.agentOrder === undefined ? i : requireInt(OP, f('agentOrder'), t.agentOrder, 0, INT4_MAX),
    position: i,
    prompt: t.prompt ?? null,
    answer: t.answer ?? null,
    outcome: requireOneOf(OP, f('outcome'), t.outcome, TURN_OUTCOMES),
    endpoint_id: optionalId(OP, f('endpointId'), t.endpointId),
    degraded: t.degraded === true,
    usage: t.usage ?? null,
    faults: t.faults ?? [],
    wait_ms: requireInt(OP, f('waitMs'), Math.round(t.waitMs ?? 0), 0, INT4_MAX),
    idempotency_key: optionalId(OP, f('idempotencyKey'), t.idempotencyKey),
  };
}

function checkUniqueTurns(turns: readonly TurnRow[]): void {
  const seen = new Set<string>();
  turns.forEach((t, i) => {
    const key = `${t.item_id}\u0000${t.agent}`;
    if (seen.has(key)) {
      throw new StoreInputError({
        operation: OP,
        field: `turns[${i}]`,
        message: `repeats item "${t.item_id}" for agent "${t.agent}"; a round holds one turn per (item, agent)`,
      });
    }
    seen.add(key);
  });
}

function stateText(s: AgentStateInput, i: number, agent: string): string {
  return encodeJson(OP, `states[${i}]`, {
    agent,
    machine_version: optionalId(OP, `states[${i}].machineVersion`, s.machineVersion),
    snapshot: s.snapshot ?? null,
    slots: s.slots ?? {},
    tool_results: s.toolResults ?? [],
  });
}

async function conflict(
  db: Kysely<StoreSchema>,
  runId: string,
  round: number,
): Promise<RoundCommitConflictError> {
  const run = await db
    .selectFrom('runs')
    .select('current_round')
    .where('run_id', '=', runId)
    .executeTakeFirst();
  return new RoundCommitConflictError({
    runId,
    round,
    currentRound: run?.current_round,
    reason: !run ? 'run_not_found' : run.current_round >= round ? 'already_committed' : 'out_of_order',
  });
}
