import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { perFileDatabase, postgresUrl } from '../support/per-file-database.ts';
import { cleanEnv, runCli } from './run-cli.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'breakwater-cli-migrate-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('breakwater migrate on PGlite', () => {
  it('applies the migrations in a fresh --data-dir, then finds nothing to do', async () => {
    const dataDir = join(dir, 'store');
    const first = await runCli(['migrate', '--data-dir', dataDir]);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^backend\s+pglite \(chosen by --data-dir\)$/m);
    expect(first.stdout).toMatch(
      new RegExp(`^location\\s+${dataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'),
    );
    expect(first.stdout).toMatch(
      /^applied\s+0001-initial, 0002-durable-state-v2, 0003-coordination, 0004-round-parts, 0005-rate-windows, 0006-coordination-sweep, 0007-committed-events$/m,
    );

    const second = await runCli(['migrate', '--data-dir', dataDir]);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/^applied\s+none \(already up to date\)$/m);
    expect(second.stdout).toMatch(
      /^schema\s+up to date: 0001-initial, 0002-durable-state-v2, 0003-coordination, 0004-round-parts, 0005-rate-windows, 0006-coordination-sweep, 0007-committed-events$/m,
    );
  });

  it('refuses --database-url together with --data-dir, in one line', async () => {
    const run = await runCli([
      'migrate',
      '--data-dir',
      join(dir, 'x'),
      '--database-url',
      'postgres://u@127.0.0.1/db',
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'breakwater migrate: give either --database-url (PostgreSQL) or --data-dir (embedded PGlite), not both\n',
    );
  });

  it('says what to do when the server is unreachable, without printing the password', async () => {
    const run = await runCli([
      'migrate',
      '--database-url',
      'postgres://postgres:hunter2-secret@127.0.0.1:1/test',
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(
      'cannot use PostgreSQL at postgres://postgres@127.0.0.1:1/test: connection refused (is the server running, on that port?)',
    );
    expect(run.stderr).toContain('start the server or fix --database-url / DATABASE_URL');
    expect(run.stderr).not.toContain('hunter2-secret');
  });

  it('a password given as ?password= is not printed either, not even in the stack trace (BREAKWATER_DEBUG=1)', async () => {
    const run = await runCli(
      [
        'migrate',
        '--database-url',
        'postgres://postgres@127.0.0.1:1/test?password=hunter3-secret&sslmode=disable',
      ],
      cleanEnv({ BREAKWATER_DEBUG: '1' }),
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'cannot use PostgreSQL at postgres://postgres@127.0.0.1:1/test?password=***',
    );
    expect(run.stderr.split('\n').length).toBeGreaterThan(3); // the stack trace is there
    expect(run.stdout + run.stderr).not.toContain('hunter3-secret');
  });
});

describe('breakwater migrate on PostgreSQL', () => {
  // An empty database of its own to migrate, made through this file's database (per-file-database.ts).
  perFileDatabase();
  const dbName = `breakwater_cli_${process.pid}`;
  let dbURL: string;
  const admin = () => new pg.Client({ connectionString: postgresUrl() });

  beforeAll(async () => {
    const u = new URL(postgresUrl());
    u.pathname = `/${dbName}`;
    dbURL = u.toString();
    const client = admin();
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS ${dbName}`);
      await client.query(`CREATE DATABASE ${dbName}`);
    } finally {
      await client.end();
    }
  });
  afterAll(async () => {
    const client = admin();
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    } finally {
      await client.end();
    }
  });

  it('--database-url migrates a fresh database and reports the postgres backend', async () => {
    const run = await runCli(['migrate', '--database-url', dbURL], cleanEnv({ DATABASE_URL: '' }));
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^backend\s+postgres \(chosen by --database-url\)$/m);
    expect(run.stdout).toMatch(
      /^applied\s+0001-initial, 0002-durable-state-v2, 0003-coordination, 0004-round-parts, 0005-rate-windows, 0006-coordination-sweep, 0007-committed-events$/m,
    );
  });

  it('DATABASE_URL alone chooses the server', async () => {
    const run = await runCli(['migrate'], cleanEnv({ DATABASE_URL: dbURL }));
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^backend\s+postgres \(chosen by DATABASE_URL\)$/m);
    expect(run.stdout).toMatch(/^applied\s+none \(already up to date\)$/m);
  });
});
