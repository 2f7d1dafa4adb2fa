import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cleanEnv, runCli } from './run-cli.ts';

/*
 * bin/breakwater.js runs an esbuild bundle of the CLI cached under node_modules/.cache/breakwater/
 * (rebuilt when a source changes), or tsx over the sources with BREAKWATER_NO_BUNDLE=1: both must be
 * the same program.
 */

describe('bin/breakwater.js', () => {
  it('the cached bundle and tsx over the sources print the same help', async () => {
    const bundled = await runCli(['--help']);
    const direct = await runCli(['--help'], cleanEnv({ BREAKWATER_NO_BUNDLE: '1' }));
    expect(bundled.code).toBe(0);
    expect(bundled.stdout).toContain('Usage: breakwater');
    expect(direct).toEqual(bundled);
    const cache = join(import.meta.dirname, '..', '..', 'node_modules', '.cache', 'breakwater');
    const builds = readdirSync(cache).filter((f) => /^cli-[0-9a-f]{16}$/.test(f));
    expect(builds).toHaveLength(1);
    expect(readdirSync(join(cache, builds[0]!))).toContain('main.mjs');
  });

  it('the bundle keeps what the sources load lazily lazy: --help loads no provider SDK and no PGlite', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bw-modules-'));
    try {
      const log = join(dir, 'modules.log');
      const register = join(import.meta.dirname, '..', 'support', 'module-log-register.mjs');
      const run = await runCli(
        ['--help'],
        cleanEnv({ BW_MODULE_LOG: log, NODE_OPTIONS: `--import=${pathToFileURL(register).href}` }),
      );
      expect(run.code).toBe(0);
      const loaded = readFileSync(log, 'utf8');
      // The log works: it saw the bundle's own entry and the CLI's argument parser.
      expect(loaded).toMatch(/\.cache\/breakwater\/cli-[0-9a-f]{16}\/main\.mjs/);
      expect(loaded).toContain('/node_modules/commander/');
      for (const lazy of ['@anthropic-ai/sdk', 'openai', '@google/genai', '@electric-sql/pglite'])
        expect(loaded, lazy).not.toContain(`/node_modules/${lazy}/`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
