import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { inject } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

/**
 * The script `node` runs for a test child file (`test/**\/*-child.ts`): its JavaScript bundle, built from the sources
 * once per test run by the globalSetup test/support/build-test-children.ts (a child under `node --import tsx` spent
 * more CPU loading through tsx than on its work). Node flags go before it and the child's arguments after it, as
 * with the .ts file.
 *
 * @example
 * ```ts
 * const CHILD = childScript(fileURLToPath(new URL('./coordination-worker-child.ts', import.meta.url)));
 * spawn(process.execPath, [CHILD, JSON.stringify(spec)]);
 * ```
 */
export function childScript(file: string): string {
  const name = relative(ROOT, file);
  if (!name.endsWith('-child.ts')) throw new Error(`${name} is not a test child file (*-child.ts)`);
  const bundle = join(inject('testChildrenDir'), name.replace(/\.ts$/, '.mjs'));
  if (!existsSync(bundle))
    throw new Error(`no bundle of ${name} at ${bundle}: was it added after the run started?`);
  return bundle;
}
