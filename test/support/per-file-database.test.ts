import { spawn } from 'node:child_process';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openDatabase } from '../../src/store/open-database.ts';
import {
  isSharedDatabaseError,
  perFileDatabase,
  postgresDatabaseName,
  postgresUrl,
  redisKeyPrefix,
} from './per-file-database.ts';
import { dropLeftovers } from './database-global-setup.ts';
import {
  connectAdmin,
  fileDatabaseName,
  newRunTag,
  parseRunTag,
  SERVER_URL,
  urlOfDatabase,
} from './test-databases.ts';

// This file's own PostgreSQL database: what every other file that touches PostgreSQL does too.
perFileDatabase();

const sharedUrl = () => urlOfDatabase(SERVER_URL, inject('testDatabases').shared);

describe('the guard against the shared test database', () => {
  it('a pg client connecting to the shared database fails, naming this file and the per-file helper', async () => {
    const client = new pg.Client({ connectionString: sharedUrl() });
    const error = await client.connect().then(
      () => undefined,
      (e: unknown) => e,
    );
    await client.end().catch(() => {});
    expect(isSharedDatabaseError(error)).toBe(true);
    const message = (error as Error).message;
    expect(message).toContain('test/support/per-file-database.test.ts');
    expect(message).toContain(`the shared database "${inject('testDatabases').shared}"`);
    expect(message).toContain('perFileDatabase() from test/support/per-file-database.ts');
  });

  it('so does the store opened on it (a pool, through kysely): the error reaches the test', async () => {
    const error = await openDatabase({ url: sharedUrl() }).then(
      async (d) => {
        await d.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    expect(String((error as Error).message) + String((error as Error).cause ?? '')).toContain(
      'perFileDatabase()',
    );
  });

  it("this file's own database is not the shared one, is migrated, and is what DATABASE_URL names while the file runs", async () => {
    const url = postgresUrl();
    expect(new URL(url).pathname).toBe(`/${postgresDatabaseName()}`);
    expect(postgresDatabaseName()).not.toBe(inject('testDatabases').shared);
    expect(process.env.DATABASE_URL).toBe(url);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ db: string; migrations: number }>(
        'select current_database() as db, (select count(*)::int from breakwater_migration) as migrations',
      );
      expect(rows[0]?.db).toBe(postgresDatabaseName());
      expect(rows[0]?.migrations).toBeGreaterThan(0);
    } finally {
      await client.end();
    }
  });

  it('a child process started with the environment reaches the same database', async () => {
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "import pg from 'pg'; const c = new pg.Client({ connectionString: process.env.DATABASE_URL }); await c.connect(); const r = await c.query('select current_database() as db'); console.log(r.rows[0].db); await c.end();",
      ],
      { env: process.env, stdio: ['ignore', 'pipe', 'pipe'], cwd: process.cwd() },
    );
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => {
      out += s;
    });
    const code = await new Promise((resolve) => child.once('close', resolve));
    expect(code).toBe(0);
    expect(out.trim()).toBe(postgresDatabaseName());
  });
});

describe('leftovers of runs that crashed', () => {
  it('are dropped by the next run: a database of a run gone for an hour goes, a live run keeps its own', async () => {
    const admin = await connectAdmin();
    const gone = fileDatabaseName(newRunTag(Date.now() - 3_600_000), 'test/x/crashed.test.ts');
    try {
      await admin.query(`create database "${gone}"`);
      const live = await dropLeftovers(admin, Date.now());
      const { rows } = await admin.query<{ datname: string }>(
        'select datname from pg_database where datname = any($1)',
        [[gone, postgresDatabaseName()]],
      );
      expect(rows.map((r) => r.datname)).toEqual([postgresDatabaseName()]);
      expect(live.has(inject('testDatabases').run)).toBe(true);
    } finally {
      await admin.query(`drop database if exists "${gone}" with (force)`);
      await admin.end();
    }
  });
});

describe('names of per-file databases and key prefixes', () => {
  it("a file's Redis key prefix carries this run's tag and stays the same within the file", () => {
    const prefix = redisKeyPrefix();
    expect(prefix).toBe(redisKeyPrefix());
    expect(parseRunTag(prefix.slice('bwtest:'.length))?.run).toBe(inject('testDatabases').run);
  });

  it('every database name fits PostgreSQL (63 bytes) and gives back its run and start', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1_600_000_000_000, max: 4_000_000_000_000 }),
        fc.string({ maxLength: 200 }),
        (now, file) => {
          const run = `${Math.floor(now / 1000).toString(36)}_abc123`;
          const name = fileDatabaseName(run, `test/x/${file}.test.ts`);
          const tag = parseRunTag(name);
          return (
            Buffer.byteLength(name) <= 63 &&
            /^[a-z0-9_]+$/.test(name) &&
            tag?.run === run &&
            tag.startedMs === Math.floor(now / 1000) * 1000
          );
        },
      ),
      { seed: 20261204, numRuns: 200 },
    );
  });
});

let before: string | undefined;
beforeAll(() => {
  before = process.env.DATABASE_URL;
});
afterAll(() => {
  // Made by the per-file hook, which ran first.
  expect(before).toBe(postgresUrl());
});
