import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { canaryKey } from './byok-canary.ts';
import { CANARY_RUN_PROFILE } from './byok-run-spec.ts';
import { findKeyInSnapshot, leakReport } from './heap-retainers.ts';
import { childScript } from '../support/test-child.ts';

// Issue 6, "done when": a canary key is injected and used for a whole run (runScenario, the path
// `breakwater run` takes, on PGlite, in a child process against this process's emulator); then its
// plaintext is searched for in every log line, every column of every table, the agents' and the
// supervisor's snapshots, every error message, the visualizer feed (live source and SSE), what the
// /byok console printed, and a V8 heap snapshot taken after the key was wiped — 0 occurrences.

interface ChildReport {
  runId: string;
  status: string;
  logs: string[];
  printed: string[];
  errors: string[];
  feed: string[];
  sse: string[];
  snapshots: string[];
  heapSnapshot: string;
}

const seed = randomBytes(8).toString('hex');
const dir = mkdtempSync(join(tmpdir(), 'byok-run-'));
const dataDir = join(dir, 'pglite');
let emulator: Emulator;
let report: ChildReport;
/** Every table of the run's database, each row as JSON. */
const tables: Record<string, string[]> = {};

const good = () => canaryKey(seed, 'openai', 'good');
const bad = () => canaryKey(seed, 'openai', 'bad');

beforeAll(async () => {
  emulator = await startEmulator({
    profile: {
      ...CANARY_RUN_PROFILE,
      keys: [...(CANARY_RUN_PROFILE.keys ?? []), { alias: 'canary-openai', key: good() }],
    },
  });
  // Asynchronous on purpose: the emulator answering the child lives on this event loop.
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--expose-gc',
      '--heap-snapshot-string-limit=10000000',
      childScript(join(import.meta.dirname, 'byok-run-child.ts')),
      JSON.stringify({ seed, dataDir, emulatorUrl: emulator.controlURL, snapshotDir: dir }),
    ],
    { cwd: join(import.meta.dirname, '../..'), maxBuffer: 256 * 1024 * 1024, timeout: 240_000 },
  );
  report = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as ChildReport;

  const database = await openDatabase({ dataDir });
  try {
    const names = await sql<{ table_name: string }>`
      select table_name from information_schema.tables
      where table_schema not in ('pg_catalog', 'information_schema') and table_type = 'BASE TABLE'`.execute(
      database.db,
    );
    for (const { table_name } of names.rows) {
      const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table_name)}`.execute(
        database.db,
      );
      tables[table_name] = rows.rows.map((r) => JSON.stringify(r));
    }
  } finally {
    await database.close();
  }
}, 300_000);

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await emulator?.close();
});

describe('a canary key used for a whole run', () => {
  it('the run completed; the bad key was refused in one line and the run went on; the good key answered turns after the credit ran out', () => {
    expect(report.errors.filter((e) => e.startsWith('UNEXPECTED'))).toEqual([]);
    expect(report.status).toBe('completed');
    expect(report.printed[0]).toBe(
      `openai key sk-proj-…${bad().slice(-4)} refused: auth (401). Check the key and try again.`,
    );
    expect(report.printed[1]).toBe(`openai key sk-proj-…${good().slice(-4)} active for session default`);
    expect(report.printed[2]).toMatch(
      /^openai key sk-proj-….{4} for session default removed: the session ended$/,
    );

    const turns = tables.turns!.map((r) => JSON.parse(r) as { endpoint_id: string | null; outcome: string });
    // The key's fingerprint is keyed by a secret of the child process: this process cannot compute it,
    // and neither can a dictionary (test/byok/byok-dictionary.test.ts).
    const byokIds = [...new Set(turns.map((t) => t.endpoint_id).filter((id) => id?.startsWith('byok:')))];
    expect(byokIds).toHaveLength(1);
    const endpoint = byokIds[0]!;
    expect(endpoint).toMatch(/^byok:default:openai:[0-9a-f]{8}$/);
    expect(endpoint).not.toBe(
      `byok:default:openai:${createHash('sha256').update(good()).digest('hex').slice(0, 8)}`,
    );
    expect(turns).toHaveLength(18);
    expect(turns.every((t) => t.outcome === 'answered' || t.outcome === 'fallback')).toBe(true);
    expect(turns.filter((t) => t.endpoint_id === endpoint).length).toBeGreaterThan(3);
    expect(turns.some((t) => t.endpoint_id === 'primary')).toBe(true);
    const byKey = emulator.stats().byKey;
    // The check call, then one call per turn the key answered (plus any retried attempt).
    expect(byKey['canary-openai']).toBeGreaterThanOrEqual(
      1 + turns.filter((t) => t.endpoint_id === endpoint).length,
    );
    const kinds = tables.events!.map((r) => (JSON.parse(r) as { type: string }).type);
    expect(kinds).toContain('byok.injected');
    expect(kinds).toContain('byok.expired');
    // The agents' states are stored (and so searched below): one row per agent.
    expect(tables.agent_states!.length).toBeGreaterThan(0);
    expect(report.snapshots.length).toBe(3 + 3);
    expect(report.feed.length).toBeGreaterThan(50);
    expect(report.sse.join('').length).toBeGreaterThan(1_000);
    expect(report.logs.length).toBeGreaterThan(20);
    expect(report.errors.some((e) => /key vault is closed/.test(e))).toBe(true);
  });

  it.each([
    ['good', good],
    ['bad', bad],
  ] as const)(
    '%s canary: 0 occurrences in logs, printed lines, errors, viz feed, SSE and snapshots',
    (_kind, key) => {
      const where = {
        logs: report.logs,
        printed: report.printed,
        errors: report.errors,
        feed: report.feed,
        sse: report.sse,
        snapshots: report.snapshots,
      };
      for (const [name, texts] of Object.entries(where)) {
        expect(
          texts.filter((t) => t.includes(key())),
          name,
        ).toEqual([]);
      }
    },
  );

  it.each([
    ['good', good],
    ['bad', bad],
  ] as const)('%s canary: 0 occurrences in every column of every table', (_kind, key) => {
    expect(Object.keys(tables).sort()).toEqual(
      expect.arrayContaining(['agent_states', 'call_results', 'events', 'rounds', 'runs', 'turns']),
    );
    for (const [table, rows] of Object.entries(tables)) {
      expect(
        rows.filter((r) => r.includes(key())),
        table,
      ).toEqual([]);
    }
  });

  it.each([
    ['good', good],
    ['bad', bad],
  ] as const)('%s canary: 0 occurrences in the heap snapshot taken after the key was wiped', (_kind, key) => {
    const hits = findKeyInSnapshot(report.heapSnapshot, key());
    expect(hits, leakReport(hits)).toEqual([]);
  });
});
