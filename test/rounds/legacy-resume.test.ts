import { randomBytes } from 'node:crypto';
import { Kysely, Migrator, PostgresDialect } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRunRestore } from '../../src/runs/run-restore.ts';
import { runScenario } from '../../src/runs/run-scenario.ts';
import type { LlmAgentDefinition } from '../../src/runtime/agent-definition.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { createPGlite } from '../../src/store/pglite-template.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { MIGRATION_LOCK_TABLE, MIGRATION_TABLE, migrateToLatest } from '../../src/store/migrate-to-latest.ts';
import type { StoreSchema } from '../../src/store/store-schema.ts';
import { breakwaterMigrationProvider } from '../../src/store/migration-provider.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { perFileDatabase, postgresUrl } from '../store/store-test-support.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

/*
 * A run stored by the 0001 schema (one agent_snapshots row per agent per round, holding the whole memory) still
 * resumes: the store takes migration 0002 on open, which numbers the turns in agent order and turns each agent's
 * latest snapshot into its state row.
 */

const spec: ScenarioSpec = {
  name: 'legacy-drill',
  runtime: {
    endpoints: [
      {
        id: 'primary',
        provider: 'openai',
        model: 'gpt-4o',
        emulator: 'openai',
        apiKey: 'sk-legacy-0000000000000001',
      },
    ],
    chains: { main: ['primary'] },
    agentDefaults: { historyTurns: 3 },
  },
  agents: [
    { name: 'Kai', chain: 'main', memory: { desk: 'ops' } },
    { name: 'Yuna', chain: 'main' },
  ],
  rounds: {
    count: 3,
    items: [
      { id: 'I1', title: 'First' },
      { id: 'I2', title: 'Second' },
    ],
  },
  emulator: { seed: 8 },
};
const AGENTS = ['Kai', 'Yuna'];

/** What the 0001 runtime wrote for an agent: its memory beside a snapshot whose memory was a placeholder. */
const MEMORY_IN_ROW = '(in this row: utterances, memory, toolResults)';

let source: BreakwaterDatabase;
const RUN_ID = `legacy-${Date.now()}`;

beforeAll(async () => {
  // Round 1 of the run, by today's runtime, interrupted after its commit: the material the 0001 rows are made of.
  source = await openDatabase({ dataDir: ':memory:' });
  const stop = new AbortController();
  await runScenario({
    scenario: spec,
    runId: RUN_ID,
    database: source,
    signal: stop.signal,
    onEvent: (e) => {
      if (e.type === 'round.committed') stop.abort();
    },
  }).catch(() => {});
});
afterAll(async () => {
  await source?.close();
});

/** Writes the run into `db` (at schema 0001) as the 0001 runtime stored it. */
async function writeLegacyRun(db: Kysely<StoreSchema>): Promise<Record<string, unknown[]>> {
  const s = source.db;
  const run = await s.selectFrom('runs').selectAll().where('run_id', '=', RUN_ID).executeTakeFirstOrThrow();
  await db
    .insertInto('runs')
    .values({
      run_id: run.run_id,
      scenario: run.scenario,
      config: JSON.stringify(run.config),
      status: 'interrupted',
      current_round: run.current_round,
      total_rounds: run.total_rounds,
      machine_version: run.machine_version,
      created_at: run.created_at,
      updated_at: run.updated_at,
      finished_at: null,
    })
    .execute();
  for (const r of await s.selectFrom('rounds').selectAll().where('run_id', '=', RUN_ID).execute())
    await db
      .insertInto('rounds')
      .values({
        run_id: r.run_id,
        round: r.round,
        committed_at: r.committed_at,
        summary: JSON.stringify(r.summary),
      })
      .execute();
  const turns = await s
    .selectFrom('turns')
    .selectAll()
    .where('run_id', '=', RUN_ID)
    .orderBy('position')
    .execute();
  for (const t of turns) {
    const { agent_seq: _seq, ...old } = t;
    await db
      .insertInto('turns')
      .values({
        ...old,
        prompt: JSON.stringify(t.prompt),
        answer: JSON.stringify(t.answer),
        usage: JSON.stringify(t.usage),
        faults: JSON.stringify(t.faults),
      } as never)
      .execute();
  }
  for (const c of await s.selectFrom('call_results').selectAll().where('run_id', '=', RUN_ID).execute())
    await db
      .insertInto('call_results')
      .values({ ...c, result: JSON.stringify(c.result) })
      .execute();
  for (const e of await s.selectFrom('events').selectAll().where('run_id', '=', RUN_ID).execute()) {
    const { id: _id, ...rest } = e;
    await db
      .insertInto('events')
      .values({ ...rest, at: Number(rest.at), data: JSON.stringify(rest.data) })
      .execute();
  }
  // The 0001 snapshot: the agent's memory (utterances included) and its actor snapshot with a placeholder memory.
  const utterances: Record<string, unknown[]> = {};
  for (const st of await s.selectFrom('agent_states').selectAll().where('run_id', '=', RUN_ID).execute()) {
    const window = (
      await createRunStore(source).recentTurns(RUN_ID, {
        agents: [st.agent],
        limit: 3,
        outcomes: ['answered', 'fallback', 'degraded'],
      })
    )[st.agent]!;
    utterances[st.agent] = window.map((t) => ({
      turnId: t.idempotencyKey,
      prompt: (t.prompt as { text: string }).text,
      answer: (t.answer as { text: string }).text,
      degraded: t.degraded,
      ...(t.endpointId ? { endpointId: t.endpointId } : {}),
    }));
    const snap = st.snapshot as { context: Record<string, unknown> };
    await db
      .insertInto('agent_snapshots')
      .values({
        run_id: RUN_ID,
        agent: st.agent,
        round: 1,
        machine_version: st.machine_version,
        data: JSON.stringify({
          utterances: utterances[st.agent],
          memory: st.slots,
          toolResults: st.tool_results,
          actorSnapshot: { ...snap, context: { ...snap.context, memory: MEMORY_IN_ROW } },
        }),
      })
      .execute();
  }
  return utterances;
}

async function migrateTo0001(db: Kysely<StoreSchema>): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: breakwaterMigrationProvider,
    migrationTableName: MIGRATION_TABLE,
    migrationLockTableName: MIGRATION_LOCK_TABLE,
  });
  const { error } = await migrator.migrateTo('0001-initial');
  expect(error).toBeUndefined();
}

async function legacyResumes(database: BreakwaterDatabase): Promise<void> {
  const db = database.db;
  await migrateTo0001(db);
  const legacy = await writeLegacyRun(db);
  // What `breakwater migrate` and every start do:
  expect(await migrateToLatest(db as Kysely<unknown>)).toEqual([
    '0002-durable-state-v2',
    '0003-coordination',
    '0004-round-parts',
    '0005-rate-windows',
    '0006-coordination-sweep',
    '0007-committed-events',
  ]);

  const store = createRunStore(database);
  const restore = await loadRunRestore(store, RUN_ID, spec.agents as LlmAgentDefinition[], () => 3);
  for (const agent of AGENTS) expect(restore.agents[agent]?.memory.utterances).toEqual(legacy[agent]);
  expect(restore.agents.Kai?.memory.slots).toEqual({ desk: 'ops' });
  expect(restore.agents.Kai?.snapshot).toMatchObject({ status: 'active', value: 'idle' });

  const result = await runScenario({ scenario: spec, runId: RUN_ID, resume: true, database });
  expect(result.run.status).toBe('completed');
  const turns = await store.listTurns(RUN_ID);
  expect(turns).toHaveLength(3 * 2 * 2);
  for (const agent of AGENTS) {
    const mine = turns.filter((t) => t.agent === agent).sort((a, b) => a.agentSeq - b.agentSeq);
    expect(mine.map((t) => t.agentSeq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(mine.map((t) => t.round)).toEqual([1, 1, 2, 2, 3, 3]);
  }
}

describe('a run stored by the 0001 schema still resumes after migration 0002', () => {
  it('on PGlite', async () => {
    const pglite = await createPGlite(undefined);
    const db = new Kysely<StoreSchema>({ dialect: new PGliteDialect(pglite) });
    try {
      await legacyResumes({
        db,
        backend: 'pglite',
        location: ':memory:',
        migrated: [],
        close: () => db.destroy(),
      });
    } finally {
      await db.destroy();
    }
  });

  it('on the PostgreSQL server', async () => {
    const name = `bw_legacy_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: postgresUrl() });
    await admin.connect();
    try {
      await admin.query(`create database ${name}`);
      const url = new URL(postgresUrl());
      url.pathname = `/${name}`;
      const pool = new pg.Pool({ connectionString: url.toString(), max: 4 });
      // The scratch database is dropped WITH (FORCE) below: a pooled connection still closing then ends with
      // 57P01 (administrator command), which is expected here and must not surface as an unhandled error.
      pool.on('error', (e: Error & { code?: string }) => {
        if (e.code !== '57P01') throw e;
      });
      const db = new Kysely<StoreSchema>({ dialect: new PostgresDialect({ pool }) });
      try {
        await legacyResumes({
          db,
          backend: 'postgres',
          location: name,
          migrated: [],
          close: () => db.destroy(),
        });
      } finally {
        await db.destroy();
      }
    } finally {
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    }
  });
});
