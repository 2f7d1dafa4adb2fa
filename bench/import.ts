/**
 * bench:import — how long `import('breakwater')` takes from the built package (dist/), the cost a program pays
 * before its first line of breakwater runs. Each sample is a fresh `node` process that imports the entry and
 * reports `performance.now()` around the import (process start-up excluded); the median of `--runs` is the figure.
 * The subpaths are measured the same way for comparison. The build is refreshed first if a source changed.
 *
 * Run: `npm run bench:import` (options: `--runs 15`). Target: `breakwater` ≤ 300 ms on this machine.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import { row, writeResult } from './lib/bench-result.ts';
import { percentile, round } from './lib/stats.ts';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..');
const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '15' } } });
const RUNS = Number(args.runs);
const TARGET_MS = 300;

/** The package's entries, by the specifier a user writes. */
const ENTRIES: Readonly<Record<string, string>> = {
  breakwater: 'dist/src/index.js',
  'breakwater/emulator': 'dist/src/entries/emulator-entry.js',
  'breakwater/testing': 'dist/src/entries/testing-entry.js',
  'breakwater/store': 'dist/src/entries/store-entry.js',
  'breakwater/viz': 'dist/src/entries/viz-entry.js',
  'breakwater/ai-sdk': 'dist/src/ai-sdk/index.js',
};

/** One fresh process: the import's own duration, ms. */
async function sample(file: string): Promise<number> {
  const url = pathToFileURL(resolve(ROOT, file)).href;
  const script = `const t = performance.now(); await import(${JSON.stringify(url)}); console.log(performance.now() - t);`;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  return Number(stdout.trim());
}

await run(process.execPath, [resolve(ROOT, 'scripts', 'build-dist.mjs'), '--if-stale'], { cwd: ROOT });
console.log(row('entry', 'p50 ms', 'min ms', 'max ms'));
const figures: Record<string, { p50Ms: number; minMs: number; maxMs: number }> = {};
// Interleaved rounds: drift on a shared machine hits every entry alike.
const samples: Record<string, number[]> = Object.fromEntries(Object.keys(ENTRIES).map((k) => [k, []]));
for (let i = 0; i < RUNS; i++) {
  for (const [name, file] of Object.entries(ENTRIES)) samples[name]!.push(await sample(file));
}
for (const name of Object.keys(ENTRIES)) {
  const s = samples[name]!;
  figures[name] = {
    p50Ms: round(percentile(s, 50), 1),
    minMs: round(Math.min(...s), 1),
    maxMs: round(Math.max(...s), 1),
  };
  console.log(row(name, figures[name].p50Ms, figures[name].minMs, figures[name].maxMs));
}
const root = figures.breakwater!;
const met = root.p50Ms <= TARGET_MS;
console.log(
  `\nimport('breakwater') p50 ${root.p50Ms} ms (target ≤ ${TARGET_MS} ms): ${met ? 'met' : 'missed'}`,
);
const path = await writeResult('import', {
  runs: RUNS,
  importMs: root.p50Ms,
  entries: figures,
  measured: 'median of fresh node processes, performance.now() around import() of the built dist/ entry',
  targets: { importMs: TARGET_MS },
  met: { importMs: met },
});
console.log(`written ${path}`);
