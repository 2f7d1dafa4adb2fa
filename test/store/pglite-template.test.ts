import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { PGlite } from '@electric-sql/pglite';
import { openDatabase } from '../../src/store/open-database.ts';
import { PGLITE_LOCK_FILE } from '../../src/store/pglite-lock.ts';
import { PGLITE_TEMPLATE_ENV, pgliteTemplatePath } from '../../src/store/pglite-template.ts';
import { createRunStore } from '../../src/store/run-store.ts';

/*
 * The initdb template: a fresh PGlite cluster (in memory or a new folder) starts from a cached dump of
 * an empty cluster instead of running initdb. These use their own template file, never the shared one.
 */

const dir = mkdtempSync(join(tmpdir(), 'bw-pglite-template-'));
const template = join(dir, 'template.tar');
afterAll(() => {
  vi.unstubAllEnvs();
  rmSync(dir, { recursive: true, force: true });
});

async function roundTrip(dataDir: string, runId: string): Promise<string[]> {
  const database = await openDatabase({ dataDir });
  try {
    const store = createRunStore(database);
    await store.createRun({ runId, scenario: 's', config: {}, totalRounds: 1, machineVersion: 'agent@test' });
    return (await store.listRuns()).map((r) => r.runId);
  } finally {
    await database.close();
  }
}

describe('PGlite initdb template', () => {
  it('the default path is per PGlite version in the temp folder; the env variable moves it or turns it off', () => {
    expect(pgliteTemplatePath({})).toMatch(/breakwater-pglite-\d+\.\d+\.\d+(-\d+)?\.tar$/);
    expect(pgliteTemplatePath({ [PGLITE_TEMPLATE_ENV]: '/x/t.tar' })).toBe('/x/t.tar');
    expect(pgliteTemplatePath({ [PGLITE_TEMPLATE_ENV]: 'off' })).toBeUndefined();
  });

  it('a damaged template is dropped, initdb runs once and leaves a good one; the next clusters (memory, new folder) start from it and migrate', async () => {
    vi.stubEnv(PGLITE_TEMPLATE_ENV, template);
    writeFileSync(template, 'not a tarball');
    // The open still succeeds: the cache can only make an open faster.
    expect(await roundTrip(':memory:', 'first')).toEqual(['first']);
    expect(readFileSync(template).subarray(257, 262).toString()).toBe('ustar');
    expect(statSync(template).size).toBeGreaterThan(1_000_000);
    const written = statSync(template).mtimeMs;

    // In memory, from the template: an empty store (nothing of the first run), migrated, usable.
    expect(await roundTrip(':memory:', 'second')).toEqual(['second']);
    // A new folder, from the template; then opened again it keeps its data (the template is for fresh ones only).
    const folder = join(dir, 'store');
    expect(await roundTrip(folder, 'in-folder')).toEqual(['in-folder']);
    expect((await roundTrip(folder, 'again')).sort()).toEqual(['again', 'in-folder']);
    expect(statSync(template).mtimeMs).toBe(written);
    expect(existsSync(`${template}.partial`)).toBe(false);
  });

  it("a template holding a folder's own files (an older version dumped a folder with its lock) is dropped: a new folder's lock is this process's", async () => {
    vi.stubEnv(PGLITE_TEMPLATE_ENV, template);
    // The old way: initdb in a folder that holds a lock naming another process, dumped as the template.
    const source = join(dir, 'locked-source');
    mkdirSync(source, { recursive: true });
    writeFileSync(
      join(source, PGLITE_LOCK_FILE),
      JSON.stringify({ pid: 999_999, host: hostname(), command: 'x', since: 1 }),
    );
    // Any cluster does: the good template the test before left, loaded into the folder, when there is one (initdb
    // costs about 6 s of CPU); initdb when this test runs alone.
    const good = existsSync(template) ? readFileSync(template) : undefined;
    const cluster = good?.subarray(257, 262).toString() === 'ustar' ? { loadDataDir: new Blob([good]) } : {};
    const pglite = await PGlite.create({ dataDir: source, ...cluster });
    writeFileSync(template, new Uint8Array(await (await pglite.dumpDataDir('none')).arrayBuffer()));
    await pglite.close();
    expect(readFileSync(template).includes(PGLITE_LOCK_FILE)).toBe(true);

    const folder = join(dir, 'from-old-template');
    const database = await openDatabase({ dataDir: folder });
    try {
      expect(JSON.parse(readFileSync(join(folder, PGLITE_LOCK_FILE), 'utf8')).pid).toBe(process.pid);
    } finally {
      await database.close();
    }
    expect(existsSync(join(folder, PGLITE_LOCK_FILE))).toBe(false);
    // The template was taken again, from memory: it holds no lock.
    expect(readFileSync(template).includes(PGLITE_LOCK_FILE)).toBe(false);
  }, 120_000);
});
