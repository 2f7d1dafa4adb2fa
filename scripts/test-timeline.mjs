#!/usr/bin/env node
// Where a test run's wall time went: `node scripts/test-timeline.mjs [file.jsonl] [--write-walls]` reads the newest
// test-output/timeline/*.jsonl (written by test/support/file-timeline.ts) and prints the run's wall time, each
// file's wall (hooks included) and its wait for PostgreSQL connections, slowest first, and how many files ran at once.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const dir = resolve(import.meta.dirname, '..', 'test-output', 'timeline');
const given = process.argv.slice(2).find((a) => !a.startsWith('--'));
const path =
  given ??
  readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .map((f) => join(dir, f))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0];
if (!path) {
  process.stderr.write(`test-timeline: no timeline in ${dir}; run the suite first\n`);
  process.exit(2);
}
const rows = readFileSync(path, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => JSON.parse(line));
const t0 = Math.min(...rows.map((r) => r.startedAt));
const t1 = Math.max(...rows.map((r) => r.endedAt));
const s = (ms) => (ms / 1000).toFixed(1).padStart(6);
const sum = rows.reduce((a, r) => a + r.endedAt - r.startedAt, 0);
const waited = rows.reduce((a, r) => a + r.waitedMs, 0);
console.log(
  `${path}\n${rows.length} files, wall ${s(t1 - t0)} s, file time ${s(sum)} s, waiting for connections ${s(waited)} s`,
);
console.log('  wall   wait  start  conns  file');
for (const r of [...rows]
  .sort((a, b) => b.endedAt - b.startedAt - (a.endedAt - a.startedAt))
  .slice(0, Number(process.env.TOP ?? 30)))
  console.log(
    `${s(r.endedAt - r.startedAt)} ${s(r.waitedMs)} ${s(r.startedAt - t0)} ${String(r.connections).padStart(6)}  ${r.file}`,
  );
const step = 15_000;
console.log('files running at once (every 15 s):');
const line = [];
for (let t = t0; t < t1; t += step) line.push(rows.filter((r) => r.startedAt <= t && r.endedAt > t).length);
console.log(`  ${line.join(' ')}`);

// `--write-walls`: keep each file's wall less its wait (seconds, files over 3 s) and the connections it took in
// test/support/file-walls.json, which test/support/file-order-sequencer.ts plans the next runs' order from.
if (process.argv.includes('--write-walls')) {
  const { writeFileSync } = await import('node:fs');
  const walls = Object.fromEntries(
    rows
      .map((r) => [
        r.file,
        {
          seconds: Math.round((r.endedAt - r.startedAt - r.waitedMs) / 100) / 10,
          connections: r.connections,
        },
      ])
      .filter(([, f]) => f.seconds > 3)
      .sort((a, b) => b[1].seconds - a[1].seconds),
  );
  const out = resolve(import.meta.dirname, '..', 'test', 'support', 'file-walls.json');
  writeFileSync(out, `${JSON.stringify(walls, null, 2)}\n`);
  console.log(`wrote ${Object.keys(walls).length} files' walls to ${out}`);
}
