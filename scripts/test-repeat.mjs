#!/usr/bin/env node
// The flake hunter: `npm run test:repeat -- <test file> [N]` runs one test file N times (default 20), each a fresh
// `vitest run` of that file, with two busy CPU loops beside it (child processes started here and killed at the end),
// and prints how many runs passed and failed. A verdict that depends on speed or load shows up here as a failure
// that a quiet run never shows. The output of every failed run is kept in test-output/repeat/ to read afterwards.
// Several files (or folders) may be given: each run is then one `vitest run` of them all (they load each other
// too), and the counts are per file.
//
//   npm run test:repeat -- test/workers/round-wakeup.test.ts 10
//   npm run test:repeat -- test/workers test/coordination 10
//   BW_REPEAT_LOAD=0 npm run test:repeat -- test/store/commit-round.test.ts   (no busy loops)
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const USAGE = 'usage: npm run test:repeat -- <test file>... [N]   (N: runs, 1..1000, default 20)';

function fail(message) {
  process.stderr.write(`test:repeat: ${message}\n${USAGE}\n`);
  process.exit(2);
}

const args = process.argv.slice(2);
const countArg = args.length > 1 && /^\d+$/.test(args.at(-1)) ? args.pop() : undefined;
if (args.length === 0) fail('no test file given');
const files = args.map((a) => {
  const file = relative(ROOT, resolve(process.cwd(), a));
  if (!existsSync(join(ROOT, file))) fail(`no such file: ${a}`);
  return file;
});
const file = files.join(' ');
const runs = countArg === undefined ? 20 : Number(countArg);
if (!Number.isInteger(runs) || runs < 1 || runs > 1000)
  fail(`N must be a whole number from 1 to 1000, got "${countArg}"`);
const loadArg = process.env.BW_REPEAT_LOAD ?? '2';
const loops = Number(loadArg);
if (!Number.isInteger(loops) || loops < 0 || loops > 16)
  fail(`BW_REPEAT_LOAD must be 0..16, got "${loadArg}"`);

const OUT = join(ROOT, 'test-output', 'repeat');
const VITEST = join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');

/** The busy loops: plain `for(;;){}` processes, each keeping one core busy the whole time. */
const busy = Array.from({ length: loops }, () =>
  spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }),
);
let current;
function stopAll() {
  for (const child of busy) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  if (current && current.exitCode === null) current.kill('SIGTERM');
}
process.on('exit', stopAll);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    stopAll();
    process.exit(130);
  });
}

/** One `vitest run` of the files: its exit code, seconds, combined output and each file's verdict. */
function runOnce(i) {
  return new Promise((done) => {
    const started = process.hrtime.bigint();
    let output = '';
    mkdirSync(OUT, { recursive: true });
    const json = join(OUT, `.results-${process.pid}-${i}.json`);
    current = spawn(
      process.execPath,
      [VITEST, 'run', ...files, '--reporter=default', '--reporter=json', `--outputFile.json=${json}`],
      {
        cwd: ROOT,
        env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    current.stdout.setEncoding('utf8').on('data', (s) => (output += s));
    current.stderr.setEncoding('utf8').on('data', (s) => (output += s));
    current.once('close', (code, signal) => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      /**
       * file → 'passed' | 'failed' | 'skipped' (a file vitest never reported counts as failed). vitest calls a file
       * whose every test was skipped (a browser test without Chromium, say) "passed": here it is 'skipped', and so is
       * a file with any test skipped, since a run that did not test something is no evidence that it passes.
       */
      const verdicts = new Map();
      let skipped = true;
      try {
        const report = JSON.parse(readFileSync(json, 'utf8'));
        for (const r of report.testResults ?? []) {
          const statuses = (r.assertionResults ?? []).map((a) => a.status);
          const ran = statuses.filter((st) => st === 'passed' || st === 'failed').length;
          const verdict =
            r.status !== 'passed' ? 'failed' : ran === 0 || ran < statuses.length ? 'skipped' : 'passed';
          verdicts.set(relative(ROOT, r.name), verdict);
        }
        skipped =
          (report.numPassedTests ?? 0) === 0 ||
          (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0) > 0;
        rmSync(json, { force: true });
      } catch {}
      done({ code: code ?? (signal ? 128 : 1), seconds, output, verdicts, skipped });
    });
  });
}

/** The names of the tests that failed, from vitest's default reporter (its `×` / `FAIL` lines). */
function failedTests(output) {
  const names = new Set();
  for (const line of output.split('\n')) {
    const m = /^\s*(?:×|FAIL)\s+(.+?)\s*(?:\d+ms)?$/.exec(line);
    if (m) names.add(m[1]);
  }
  return [...names].slice(0, 10);
}

process.stdout.write(`test:repeat: ${file}, ${runs} runs, ${loops} busy CPU loop(s) beside it\n`);
let passed = 0;
let failed = 0;
let notRun = 0;
const times = [];
/** Per test file: [passed, failed, skipped]. */
const perFile = new Map();
const KIND = { passed: 0, failed: 1, skipped: 2 };
for (let i = 1; i <= runs; i++) {
  const { code, seconds, output, verdicts, skipped } = await runOnce(i);
  times.push(seconds);
  for (const [f, verdict] of verdicts) {
    const c = perFile.get(f) ?? [0, 0, 0];
    c[KIND[verdict]]++;
    perFile.set(f, c);
  }
  if (code === 0 && skipped) {
    notRun++;
    process.stdout.write(`  run ${i}/${runs}: SKIPPED tests (not all ran) in ${seconds.toFixed(1)} s\n`);
    for (const [f, verdict] of verdicts)
      if (verdict === 'skipped') process.stdout.write(`    skipped: ${f}\n`);
  } else if (code === 0) {
    passed++;
    process.stdout.write(`  run ${i}/${runs}: passed in ${seconds.toFixed(1)} s\n`);
  } else {
    failed++;
    const log = join(OUT, `${basename(files[0], '.ts')}${files.length > 1 ? '-and-more' : ''}-run${i}.log`);
    writeFileSync(log, output);
    process.stdout.write(
      `  run ${i}/${runs}: FAILED (exit ${code}) in ${seconds.toFixed(1)} s; output in ${relative(ROOT, log)}\n`,
    );
    for (const [f, verdict] of verdicts) if (verdict === 'failed') process.stdout.write(`    failed: ${f}\n`);
    for (const name of failedTests(output)) process.stdout.write(`    × ${name}\n`);
  }
}
stopAll();
const sorted = [...times].sort((a, b) => a - b);
const median = sorted[Math.floor(sorted.length / 2)];
if (perFile.size > 1)
  for (const [f, [p, n, k]] of [...perFile].sort())
    process.stdout.write(`  ${f}: ${p} passed, ${n} failed${k > 0 ? `, ${k} skipped` : ''}\n`);
process.stdout.write(
  `test:repeat: ${file}: ${passed} passed, ${failed} failed${notRun > 0 ? `, ${notRun} with tests skipped` : ''} of ${runs} runs ` +
    `(${loops} busy loops; per run median ${median.toFixed(1)} s, max ${sorted.at(-1).toFixed(1)} s)\n`,
);
process.exit(failed === 0 && notRun === 0 ? 0 : 1);
