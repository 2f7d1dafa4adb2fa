import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Kysely, Migrator, NO_MIGRATIONS, sql } from 'kysely';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { type BreakwaterDatabase, IN_MEMORY, openDatabase } from '../../src/store/open-database.ts';
import { MIGRATION_LOCK_TABLE, MIGRATION_TABLE, migrateToLatest } from '../../src/store/migrate-to-latest.ts';
import { MIGRATION_NAMES, breakwaterMigrationProvider } from '../../src/store/migration-provider.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { perFileDatabase, postgresUrl } from './store-test-support.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

const STORE_TABLES = [
  'agent_snapshots',
  'agent_states',
  'call_results',
  'coordination_health',
  'coordination_probes',
  'coordination_rates',
  'coordination_tokens',
  'events',
  'live_events',
  'round_parts',
  'rounds',
  'runs',
  'turns',
];

async function publicTables(db: Kysely<unknown>): Promise<string[]> {
  const { rows } = await sql<{ table_name: string }>`
    select table_name from information_schema.tables
    where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`.execute(db);
  return rows.map((r) => r.table_name);
}

async function appliedMigrations(db: Kysely<unknown>): Promise<string[]> {
  const { rows } = await sql<{
    name: string;
  }>`select name from ${sql.table(MIGRATION_TABLE)} order by name`.execute(db);
  return rows.map((r) => r.name);
}

/** A throwaway database on the server, so "fresh" really means fresh while other files share `test`. */
async function withFreshServerDatabase(fn: (url: string) => Promise<void>): Promise<void> {
  const name = `bw_store_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgresUrl() });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
    const url = new URL(postgresUrl());
    url.pathname = `/${name}`;
    await fn(url.toString());
  } finally {
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
}

describe('migrations on a fresh database', () => {
  it('pglite: creates every table on first open, and a second migrate is a no-op', async () => {
    const database = await openDatabase({ dataDir: IN_MEMORY });
    try {
      expect(database.backend).toBe('pglite');
      expect(database.migrated).toEqual(MIGRATION_NAMES);
      expect(MIGRATION_NAMES).toContain('0001-initial');
      const db = database.db as Kysely<unknown>;
      expect(await publicTables(db)).toEqual([...STORE_TABLES, MIGRATION_TABLE, MIGRATION_LOCK_TABLE].sort());
      const applied = await appliedMigrations(db);
      expect(await migrateToLatest(db)).toEqual([]);
      expect(await appliedMigrations(db)).toEqual(applied);
    } finally {
      await database.close();
    }
  });

  it('pglite: a second open of the same directory keeps the data and migrates nothing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'breakwater-migrate-'));
    try {
      const first = await openDatabase({ dataDir: dir });
      expect(first.location).toBe(dir);
      expect(first.migrated).toEqual(MIGRATION_NAMES);
      await createRunStore(first).createRun({
        runId: 'kept',
        scenario: 's',
        totalRounds: 1,
        machineVersion: 'v1',
      });
      await first.close();
      await first.close(); // twice is fine

      const second = await openDatabase({ dataDir: dir });
      try {
        expect(second.migrated).toEqual([]);
        expect(await appliedMigrations(second.db as Kysely<unknown>)).toEqual(MIGRATION_NAMES);
        expect((await createRunStore(second).getRun('kept'))?.scenario).toBe('s');
      } finally {
        await second.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('postgres: a fresh database gets every table; concurrent opens migrate it exactly once', async () => {
    await withFreshServerDatabase(async (url) => {
      const opened = await Promise.all([openDatabase({ url }), openDatabase({ url }), openDatabase({ url })]);
      try {
        expect(opened.map((d) => d.backend)).toEqual(['postgres', 'postgres', 'postgres']);
        expect(opened.flatMap((d) => d.migrated)).toEqual(MIGRATION_NAMES);
        const db = opened[0]!.db as Kysely<unknown>;
        expect(await publicTables(db)).toEqual(
          [...STORE_TABLES, MIGRATION_TABLE, MIGRATION_LOCK_TABLE].sort(),
        );
        expect(await migrateToLatest(db)).toEqual([]);
      } finally {
        await Promise.all(opened.map((d) => d.close()));
      }
      const again = await openDatabase({ url });
      try {
        expect(again.migrated).toEqual([]);
        expect(await appliedMigrations(again.db as Kysely<unknown>)).toEqual(MIGRATION_NAMES);
      } finally {
        await again.close();
      }
    });
  });

  it('postgres: every migration goes down and up again cleanly', async () => {
    await withFreshServerDatabase(async (url) => {
      const database = await openDatabase({ url });
      try {
        const db = database.db as Kysely<unknown>;
        const migrator = new Migrator({
          db,
          provider: breakwaterMigrationProvider,
          migrationTableName: MIGRATION_TABLE,
          migrationLockTableName: MIGRATION_LOCK_TABLE,
        });
        const down = await migrator.migrateTo(NO_MIGRATIONS);
        expect(down.error).toBeUndefined();
        expect(await publicTables(db)).toEqual([MIGRATION_TABLE, MIGRATION_LOCK_TABLE].sort());
        expect(await migrateToLatest(db)).toEqual(MIGRATION_NAMES);
        expect(await publicTables(db)).toEqual(
          [...STORE_TABLES, MIGRATION_TABLE, MIGRATION_LOCK_TABLE].sort(),
        );
      } finally {
        await database.close();
      }
    });
  });
});

describe('openDatabase picks its backend', () => {
  let shared: BreakwaterDatabase | undefined;
  afterEach(() => {
    vi.unstubAllEnvs();
  });
  afterAll(async () => {
    await shared?.close();
  });

  it('uses DATABASE_URL when no option is given, and never reports the password', async () => {
    const withPassword = new URL(postgresUrl());
    withPassword.password = 'hunter2-not-needed-with-trust';
    vi.stubEnv('DATABASE_URL', withPassword.toString());
    shared = await openDatabase();
    expect(shared.backend).toBe('postgres');
    expect(shared.location).not.toContain('hunter2');
    expect(shared.location).toContain('127.0.0.1');
  });

  it('prefers an explicit dataDir over DATABASE_URL', async () => {
    vi.stubEnv('DATABASE_URL', postgresUrl());
    const database = await openDatabase({ dataDir: IN_MEMORY });
    try {
      expect(database.backend).toBe('pglite');
      expect(database.location).toBe(IN_MEMORY);
    } finally {
      await database.close();
    }
  });

  it('does not connect when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('shutting down'));
    await expect(openDatabase({ dataDir: IN_MEMORY, signal: controller.signal })).rejects.toThrow(
      'shutting down',
    );
  });
});
