import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunStore } from '../../src/store/run-store.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { PGLITE_INIT_MARKER } from '../../src/store/incomplete-cluster-error.ts';
import { PGLITE_LOCK_FILE } from '../../src/store/pglite-lock.ts';
import { cleanEnv, runCli } from '../cli/run-cli.ts';
import { waitFor } from '../support/wait-for.ts';
import { childScript } from '../support/test-child.ts';

/*
 * A process killed during a PGlite folder's first start (the template being unpacked, or initdb) used to leave a
 * folder PGlite could not open again ("PGlite failed to initialize properly"): the crash test met it in CI. The
 * first start now runs under a marker file, and the next open starts a marked folder over. These kill a real
 * child process (SIGKILL, by pid) at chosen points of its first start, then open the folder.
 */

const CHILD = childScript(fileURLToPath(new URL('../support/hold-data-dir-child.ts', import.meta.url)));
const dir = mkdtempSync(join(tmpdir(), 'bw-first-start-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function holder(dataDir: string, env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, [CHILD, dataDir], {
    env: cleanEnv(env),
    stdio: ['ignore', 'ignore', 'ignore'],
  });
}

async function killNow(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/** Opens the folder in this process and commits a run in it: the folder is a working store. */
async function usable(dataDir: string, runId: string): Promise<string | undefined> {
  const database = await openDatabase({ dataDir });
  try {
    const store = createRunStore(database);
    await store.createRun({ runId, scenario: 's', totalRounds: 1, machineVersion: 'agent@test' });
    return (await store.getRun(runId))?.runId;
  } finally {
    await database.close();
  }
}

describe("a PGlite folder's first start, interrupted", () => {
  // The file whose appearance triggers the kill, and how long after it: early (nothing but the marker),
  // mid-unpack, late in the cluster's files.
  const points: ReadonlyArray<{ file: string; afterMs: number; env?: Record<string, string> }> = [
    { file: PGLITE_INIT_MARKER, afterMs: 0 },
    { file: 'PG_VERSION', afterMs: 0 },
    { file: 'base', afterMs: 20 },
    { file: 'pg_wal', afterMs: 0 },
    // initdb instead of the cached template: the longest first start.
    { file: 'base', afterMs: 0, env: { BREAKWATER_PGLITE_TEMPLATE: 'off' } },
  ];

  for (const [i, point] of points.entries()) {
    it(`killed ${point.afterMs} ms after ${point.file} appears${point.env ? ' (initdb)' : ''}: the next open starts over and the folder works`, async () => {
      const dataDir = join(dir, `kill-${i}`);
      const child = holder(dataDir, point.env);
      try {
        await waitFor(() => existsSync(join(dataDir, point.file)), `${point.file} in ${dataDir}`, 60_000);
        if (point.afterMs > 0) await new Promise((r) => setTimeout(r, point.afterMs));
      } finally {
        await killNow(child);
      }
      // The kill landed in the first start when the marker is still there (it goes once PGlite has started).
      const interrupted = existsSync(join(dataDir, PGLITE_INIT_MARKER));
      if (point.file === PGLITE_INIT_MARKER) expect(interrupted).toBe(true);
      expect(await usable(dataDir, `after-kill-${i}`)).toBe(`after-kill-${i}`);
      expect(readdirSync(dataDir)).not.toContain(PGLITE_INIT_MARKER);
      expect(readdirSync(dataDir)).toContain('PG_VERSION');
    }, 120_000);
  }

  it('a folder with files but no cluster and no marker is refused with one line, and its files are left alone', async () => {
    const dataDir = join(dir, 'not-a-cluster');
    mkdirSync(join(dataDir, 'base'), { recursive: true });
    writeFileSync(join(dataDir, 'notes.txt'), 'mine');
    await expect(openDatabase({ dataDir })).rejects.toMatchObject({
      code: 'INCOMPLETE_PGLITE_CLUSTER',
      message: expect.stringContaining(dataDir),
    });
    expect(readdirSync(dataDir).sort()).toEqual(['base', 'notes.txt']);
    const cli = await runCli(['runs', '--data-dir', dataDir], cleanEnv({ DATABASE_URL: '' }));
    expect(cli.code).toBe(1);
    const lines = cli.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('not a complete PGlite cluster');
    expect(lines[0]).toContain(dataDir);
    expect(readdirSync(dataDir).sort()).toEqual(['base', 'notes.txt']);
    expect(existsSync(join(dataDir, PGLITE_LOCK_FILE))).toBe(false);
  }, 60_000);
});
