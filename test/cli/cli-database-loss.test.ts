import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/open-database.ts';
import { perFileDatabase, postgresUrl } from '../support/per-file-database.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';
import { cleanEnv, finished, runCli, spawnCli } from './run-cli.ts';

// Issue 19: every wait on the database is bounded. A PostgreSQL that stops answering mid-run (a TCP
// proxy that stops forwarding) or answers garbage makes `breakwater run` stop within 30 s with ONE line:
// what happened, where the run stands (the round in progress not committed), how to resume; exit code
// non-zero. A later `breakwater resume` completes the run. SIGTERM ends the process within seconds even
// while the database hangs. The password in the URL is never printed. Real CLI, real PostgreSQL.

// This file's own PostgreSQL database (test/support/per-file-database.ts).
// At most 12 PostgreSQL connections at once: the CLI and the test (measured peak, with room).
perFileDatabase({ connections: 12 });
const server = () => new URL(postgresUrl());
const dir = mkdtempSync(join(tmpdir(), 'bw-dbloss-'));
const scenario = join(dir, 'db-loss.yaml');
const PASSWORD = 'pw-secret-do-not-print';
let direct: pg.Client;
const proxies: TcpProxy[] = [];
const children: ChildProcess[] = [];
const runIds: string[] = [];

beforeAll(async () => {
  writeFileSync(
    scenario,
    `name: db-loss
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: sk-emu-dbloss-0001 }
  chains: { main: [primary] }
  concurrency: { limit: 2 }
agents:
  - { name: Kai, chain: main }
  - { name: Yuna, chain: main }
  - { name: Miso, chain: main }
rounds:
  count: 4
  items:
    - { id: U01, title: Checkout latency }
    - { id: U02, title: Payments backlog }
emulator:
  acceptAnyKey: true
  latency: { minMs: 300, maxMs: 500 }
`,
  );
  // The cases poll `runs` from the start, before any CLI has migrated a fresh database: migrate it first.
  await (await openDatabase({ url: postgresUrl() })).close();
  direct = new pg.Client({ connectionString: postgresUrl() });
  await direct.connect();
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  for (const p of proxies) await p.close();
  if (runIds.length > 0) {
    for (const table of ['events', 'call_results', 'runs']) {
      await direct.query(`delete from ${table} where run_id = any($1)`, [runIds]);
    }
  }
  await direct?.end();
  rmSync(dir, { recursive: true, force: true });
});

/** The proxied URL, with a password the CLI must never print (the server trusts any). */
function proxiedUrl(port: number): string {
  const u = new URL(postgresUrl());
  u.host = `127.0.0.1:${port}`;
  u.password = PASSWORD;
  return u.toString();
}

async function currentRound(runId: string): Promise<number> {
  const r = await direct.query<{ current_round: number }>(
    'select current_round from runs where run_id = $1',
    [runId],
  );
  return r.rows[0]?.current_round ?? 0;
}

/** Polls until round 1 is committed; bounded. */
async function untilRoundOne(runId: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null)
      throw new Error(`the run exited (${child.exitCode}) before round 1 committed`);
    if ((await currentRound(runId)) >= 1) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('round 1 was not committed within 60 s');
}

async function startRun(
  runId: string,
  proxy: TcpProxy,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; done: ReturnType<typeof finished> }> {
  runIds.push(runId);
  const child = spawnCli(
    ['run', scenario, '--no-stdin', '--no-live', '--run-id', runId, '--database-url', proxiedUrl(proxy.port)],
    cleanEnv(env),
  );
  children.push(child);
  return { child, done: finished(child) };
}

// The cases are independent (own proxy, run id, fake server) and mostly wait on the database's bounds: they run side
// by side.
describe.concurrent.each(['freeze', 'garbage', 'freeze, then every connection reset'] as const)(
  'PostgreSQL: %s, mid-run',
  (mode) => {
    it('the CLI stops within 30 s with one line (status, resume hint), exit non-zero; resume completes', async () => {
      const proxy = await startTcpProxy({ host: server().hostname, port: Number(server().port || 5432) });
      proxies.push(proxy);
      const runId = `dbloss-${mode.split(',')[0]}-${process.pid}-${Date.now()}`;
      // The plain freeze keeps the default bounds (10 s); the others show the bound is the user's to set.
      const env: Record<string, string> = mode === 'freeze' ? {} : { BREAKWATER_DB_TIMEOUT_MS: '3000' };
      const { child, done } = await startRun(runId, proxy, env);
      await untilRoundOne(runId, child);
      proxy.setMode(mode === 'garbage' ? 'garbage' : 'freeze');
      const switchedAt = performance.now();
      // The later reset used to kill the process with a raw "Unhandled 'error' event".
      const reset =
        mode !== 'freeze' && mode !== 'garbage' ? setTimeout(() => proxy.resetAll(), 2_000) : undefined;
      let guard: ReturnType<typeof setTimeout> | undefined;
      const run = await Promise.race([
        done,
        new Promise<never>((_, reject) => {
          guard = setTimeout(() => reject(new Error('still running 45 s after the switch')), 45_000);
        }),
      ]).finally(() => {
        // Neither timer may fire after this test (the worker goes on with another file: isolate is off).
        clearTimeout(reset);
        clearTimeout(guard);
      });
      const tookMs = performance.now() - switchedAt;
      expect(tookMs).toBeLessThan(30_000);
      expect(run.code).toBe(3);
      const lines = run.stderr.trimEnd().split('\n');
      expect(lines, run.stderr).toHaveLength(1);
      expect(run.stderr).not.toMatch(/Unhandled|at .+\.js:\d+/);
      expect(lines[0]).toMatch(
        new RegExp(
          `^breakwater run: the database stopped answering \\(PostgreSQL at postgres://postgres@127\\.0\\.0\\.1:${proxy.port}${server().pathname}: .+\\); run ${runId} stopped: round 1 of 4 is committed, round 2 was not committed; continue it with \`breakwater resume ${runId}\` once the database answers again$`,
        ),
      );
      expect(run.stdout + run.stderr).not.toContain(PASSWORD);
      expect(await currentRound(runId)).toBe(1);

      // The hung sessions go away with the proxy; the run resumes on the server directly.
      await proxy.close();
      const resumed = await runCli([
        'resume',
        runId,
        '--no-stdin',
        '--no-live',
        '--database-url',
        postgresUrl(),
      ]);
      expect(resumed.code, resumed.stderr).toBe(0);
      const row = await direct.query('select status, current_round from runs where run_id = $1', [runId]);
      expect(row.rows[0]).toEqual({ status: 'completed', current_round: 4 });
      const turns = await direct.query('select count(*)::int as n from turns where run_id = $1', [runId]);
      expect(turns.rows[0].n).toBe(4 * 2 * 3);
    }, 240_000);
  },
);

describe.concurrent('SIGTERM while the database hangs', () => {
  it('ends the process within 10 s, saying so in one line', async () => {
    const proxy = await startTcpProxy({ host: server().hostname, port: Number(server().port || 5432) });
    proxies.push(proxy);
    const runId = `dbloss-sigterm-${process.pid}-${Date.now()}`;
    const { child, done } = await startRun(runId, proxy);
    await untilRoundOne(runId, child);
    proxy.setMode('freeze');
    await new Promise((r) => setTimeout(r, 500));
    const sentAt = performance.now();
    child.kill('SIGTERM');
    const run = await Promise.race([
      done,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('still running 30 s after SIGTERM')), 30_000),
      ),
    ]);
    expect(performance.now() - sentAt).toBeLessThan(10_000);
    expect(run.code).not.toBe(0);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/SIGTERM|interrupted|database stopped answering/);
    expect(run.stdout + run.stderr).not.toContain(PASSWORD);
  }, 180_000);
});

describe.concurrent('a server that is not (or no longer) PostgreSQL', () => {
  const servers: Server[] = [];
  afterAll(() => {
    for (const s of servers) s.close();
  });
  async function fake(behaviour: (s: import('node:net').Socket) => void): Promise<number> {
    const s = createServer((socket) => {
      socket.on('error', () => {});
      behaviour(socket);
    });
    servers.push(s);
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    return (s.address() as { port: number }).port;
  }

  it.each([
    [
      'closes every connection at once',
      (s: import('node:net').Socket) => s.destroy(),
      /the server closed the connection/,
    ],
    [
      'accepts and never answers',
      (s: import('node:net').Socket) => s.on('data', () => {}),
      /no answer (while connecting )?within 3000 ms/,
    ],
    [
      'answers garbage',
      (s: import('node:net').Socket) => s.write(Buffer.from('Z\xff\xff\xff\xffnot postgres', 'latin1')),
      /no answer while connecting|did not answer as PostgreSQL|something that is not PostgreSQL answers there/,
    ],
  ])(
    'one that %s: one line, bounded, no "migration failed", no password',
    async (_what, behaviour, expected) => {
      const port = await fake(behaviour);
      const started = performance.now();
      const run = await runCli(
        ['migrate', '--database-url', `postgres://app:${PASSWORD}@127.0.0.1:${port}/db`],
        cleanEnv({ BREAKWATER_DB_TIMEOUT_MS: '3000' }),
      );
      expect(performance.now() - started).toBeLessThan(30_000);
      expect(run.code).toBe(1);
      expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(
        new RegExp(
          `^breakwater migrate: cannot use PostgreSQL at postgres://app@127\\.0\\.0\\.1:${port}/db: `,
        ),
      );
      expect(run.stderr).toMatch(expected);
      expect(run.stderr).not.toMatch(/migration .*failed|breakwater migrate` again/);
      expect(run.stderr).not.toContain(PASSWORD);
    },
    60_000,
  );
});
