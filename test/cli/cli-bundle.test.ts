import { readdirSync } from 'node:fs';
import { join } from 'node:path';
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
    expect(readdirSync(cache).filter((f) => /^cli-[0-9a-f]{16}\.mjs$/.test(f))).toHaveLength(1);
  });
});
