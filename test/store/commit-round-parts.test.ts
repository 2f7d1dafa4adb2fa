import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BreakwaterDatabase } from '../../src/store/open-database.ts';
import { isRoundCommitConflictError } from '../../src/store/round-commit-conflict-error.ts';
import { type RunStore, createRunStore } from '../../src/store/run-store.ts';
import { commitRoundStatement, type RoundDocument, splitIntoParts } from '../../src/store/round-commit.ts';
import type { CommitRoundInput } from '../../src/store/store-types.ts';
import {
  BACKENDS,
  MACHINE_VERSION,
  deleteRuns,
  footprint,
  perFileDatabase,
  state,
  turn,
  uniqueId,
} from './store-test-support.ts';

// Issue 42, "a 10 MB scenario peaks at ≤ 10× its size": a round of 4,000 turns whose prompts hold 10 KB of item text
// was ONE statement carrying ~42 MB of JSON, and PGlite's memory grew to ~8× that (739 MB peak, 12.7 s). A round over
// a part's size is now written as several statements in one transaction. What it stores must be exactly what the one
// statement stores, all or nothing.

perFileDatabase();

const ONE_STATEMENT = Number.MAX_SAFE_INTEGER;
const SMALL_PARTS = 1_500;

/** Three agents, eight items, turns listed out of each agent's order (as a round's turns finish), with events. */
function roundInput(runId: string, round: number): CommitRoundInput {
  const agents = ['kai', 'yuna', 'andrew'];
  const turns = [];
  for (let item = 7; item >= 0; item--)
    for (const [a, agent] of agents.entries())
      turns.push({
        ...turn(`item-${item}`, agent, round, {
          answer: { text: `${agent} ${item} ${'x'.repeat(100 * a)}` },
        }),
        agentOrder: (item * 5 + a) % 8,
      });
  return {
    runId,
    round,
    turns,
    states: agents.map((a) => state(a, round)),
    summary: { round },
    health: { primary: { state: 'closed' } },
    events: turns.map((t, i) => ({
      type: 'turn.completed',
      at: round * 1_000 + i,
      agent: t.agent,
      endpoint: null,
      data: { item: t.itemId },
    })),
  };
}

describe('splitIntoParts', () => {
  it('keeps every document once, in order, no part over the size unless one document is, and reads ahead by one document at most (fast-check, fixed seed)', () => {
    const doc = fc.string({ minLength: 1, maxLength: 40 });
    fc.assert(
      fc.property(
        fc.array(doc, { maxLength: 30 }),
        fc.array(doc, { maxLength: 10 }),
        fc.array(doc, { maxLength: 30 }),
        fc.integer({ min: 1, max: 120 }),
        (turns, states, events, size) => {
          let read = 0;
          function* docs(): Generator<RoundDocument> {
            const all: RoundDocument[] = [
              ...turns.map((d) => ['turns', d] as const),
              ...states.map((d) => ['states', d] as const),
              ...events.map((d) => ['events', d] as const),
            ];
            for (const d of all) {
              read += 1;
              yield d;
            }
          }
          const parts = [];
          let held = 0;
          for (const part of splitIntoParts(docs(), size)) {
            held += part.turns.length + part.states.length + part.events.length;
            // Only the part given and the one document that did not fit in it have been encoded.
            expect(read).toBeLessThanOrEqual(held + 1);
            parts.push(part);
          }
          expect(parts.flatMap((p) => p.turns)).toEqual(turns);
          expect(parts.flatMap((p) => p.states)).toEqual(states);
          expect(parts.flatMap((p) => p.events)).toEqual(events);
          for (const p of parts) {
            const all = [...p.turns, ...p.states, ...p.events];
            if (all.length > 1) expect(all.join(',').length).toBeLessThanOrEqual(size);
          }
          expect(parts.length).toBeGreaterThanOrEqual(1);
        },
      ),
      { seed: 4242, numRuns: 2_000 },
    );
  });
});

describe.each(BACKENDS)('a round committed in parts on $name', (backend) => {
  let database: BreakwaterDatabase;
  let store: RunStore;
  const runIds: string[] = [];

  beforeAll(async () => {
    database = await backend.open();
    store = createRunStore(database);
  });
  afterAll(async () => {
    await deleteRuns(database, runIds);
    await database?.close();
  });

  async function newRun(): Promise<string> {
    const runId = uniqueId('parts');
    runIds.push(runId);
    await store.createRun({ runId, scenario: 'parts', totalRounds: 3, machineVersion: MACHINE_VERSION });
    return runId;
  }

  const commit = (input: CommitRoundInput, partBytes: number) =>
    commitRoundStatement(database.db, input, new Date(1_000 * input.round), new Map(), undefined, partBytes);

  /** Everything a commit wrote for a run, the run id left out, in a fixed order. */
  async function stored(runId: string) {
    const { db } = database;
    const turns = await db
      .selectFrom('turns')
      .select([
        'round',
        'item_id',
        'agent',
        'agent_seq',
        'position',
        'prompt',
        'answer',
        'outcome',
        'endpoint_id',
        'usage',
        'faults',
        'wait_ms',
        'idempotency_key',
      ])
      .where('run_id', '=', runId)
      .orderBy('agent')
      .orderBy('agent_seq')
      .execute();
    const states = await db
      .selectFrom('agent_states')
      .select(['agent', 'machine_version', 'snapshot', 'slots', 'tool_results', 'last_round'])
      .where('run_id', '=', runId)
      .orderBy('agent')
      .execute();
    const events = await db
      .selectFrom('events')
      .select(['seq', 'at', 'type', 'agent', 'endpoint', 'data'])
      .where('run_id', '=', runId)
      .orderBy('seq')
      .execute();
    const rounds = await db
      .selectFrom('rounds')
      .select(['round', 'summary', 'health'])
      .where('run_id', '=', runId)
      .orderBy('round')
      .execute();
    return { turns, states, events, rounds };
  }

  it('stores exactly what one statement stores, round after round', async () => {
    const whole = await newRun();
    const parted = await newRun();
    for (const round of [1, 2]) {
      await commit(roundInput(whole, round), ONE_STATEMENT);
      await commit(roundInput(parted, round), SMALL_PARTS);
    }
    const a = await stored(whole);
    const b = await stored(parted);
    expect(a.turns).toHaveLength(48);
    expect(b.events.map((e) => Number(e.seq))).toEqual(Array.from({ length: 48 }, (_, i) => i + 1));
    expect(b).toEqual(a);
  });

  it('a round committed already is refused in parts too, and nothing of it is written', async () => {
    const runId = await newRun();
    await commit(roundInput(runId, 1), SMALL_PARTS);
    const before = await footprint(database, runId);
    const events = async () =>
      Number(
        (
          await database.db
            .selectFrom('events')
            .select(sql<string | number>`count(*)`.as('n'))
            .where('run_id', '=', runId)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const eventsBefore = await events();
    const e = await commit(roundInput(runId, 1), SMALL_PARTS).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(isRoundCommitConflictError(e)).toBe(true);
    expect((e as { reason: string }).reason).toBe('already_committed');
    expect(await footprint(database, runId)).toEqual(before);
    expect(await events()).toBe(eventsBefore);
  });

  it('a round stopped after its first part stores nothing of it (one transaction)', async () => {
    const runId = await newRun();
    const before = await footprint(database, runId);
    // A real signal that aborts on its third check: the first is before any work, the second before the first part,
    // the third between the first part and the second.
    const stop = new AbortController();
    const check = stop.signal.throwIfAborted.bind(stop.signal);
    let checks = 0;
    stop.signal.throwIfAborted = () => {
      if (++checks === 3) stop.abort(new Error('stopped between parts'));
      check();
    };
    const input = roundInput(runId, 1);
    const e = await commitRoundStatement(
      database.db,
      input,
      new Date(1_000),
      new Map(),
      stop.signal,
      SMALL_PARTS,
    ).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect((e as Error).message).toBe('stopped between parts');
    expect(checks).toBeGreaterThanOrEqual(3);
    expect(await footprint(database, runId)).toEqual(before);
    // The round commits afterwards as if nothing had happened.
    await commit(input, SMALL_PARTS);
    expect((await footprint(database, runId)).turns).toBe(24);
  });

  it('listTurns without prompts gives the same turns with prompt null (the report reads no prompt)', async () => {
    const runId = await newRun();
    await commit(roundInput(runId, 1), SMALL_PARTS);
    const all = await store.listTurns(runId);
    const slim = await store.listTurns(runId, { withPrompts: false });
    expect(all).toHaveLength(24);
    expect(all.every((t) => t.prompt !== null)).toBe(true);
    expect(slim).toEqual(all.map((t) => ({ ...t, prompt: null })));
  });
});
