import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { PGLITE_LOCK_FILE } from '../../src/store/pglite-lock.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { cleanEnv, runCli, waitForOutput } from '../cli/run-cli.ts';
import { childScript } from '../support/test-child.ts';

/*
 * PGlite serves one process: a second process on the same data folder gets one clear line (which process holds
 * it, and that --database-url allows concurrent access) and the folder stays intact. The holder is a child
 * process this test starts and kills by pid.
 */

const CHILD = childScript(fileURLToPath(new URL('../support/hold-data-dir-child.ts', import.meta.url)));
const dir = mkdtempSync(join(tmpdir(), 'bw-single-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('one process per PGlite data folder', () => {
  it('a second process is refused with one line naming the holder; after the holder dies the folder opens intact', async () => {
    const dataDir = join(dir, 'store');
    // Some data the refused process must not damage.
    const setup = await openDatabase({ dataDir });
    await createRunStore(setup).createRun({
      runId: 'kept',
      scenario: 's',
      totalRounds: 1,
      machineVersion: 'agent@2',
    });
    await setup.close();
    expect(existsSync(join(dataDir, PGLITE_LOCK_FILE))).toBe(false);

    const holder = spawn(process.execPath, [CHILD, dataDir], {
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      await waitForOutput(holder, /holding/, 60_000);
      const refused = await runCli(['runs', '--json', '--data-dir', dataDir], cleanEnv({ DATABASE_URL: '' }));
      expect(refused.code).toBe(1);
      const lines = refused.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`in use by process ${holder.pid}`);
      expect(lines[0]).toContain('--database-url');
      expect(lines[0]).not.toContain('BREAKWATER_DEBUG');
      // In this process too (the library, not only the CLI).
      await expect(openDatabase({ dataDir })).rejects.toMatchObject({
        code: 'DATA_DIR_IN_USE',
        pid: holder.pid,
      });
    } finally {
      holder.kill('SIGKILL');
      await new Promise((resolve) => holder.once('exit', resolve));
    }
    // The dead holder's lock is stale: the next open takes it over, and the data is all there.
    const after = await openDatabase({ dataDir });
    try {
      expect((await createRunStore(after).getRun('kept'))?.scenario).toBe('s');
    } finally {
      await after.close();
    }
    expect(existsSync(join(dataDir, PGLITE_LOCK_FILE))).toBe(false);
  }, 120_000);
});
