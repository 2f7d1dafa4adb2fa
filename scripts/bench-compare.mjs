#!/usr/bin/env node
// bench-compare: the same benchmarks in two trees (a "before" and an "after" checkout, each with its own
// node_modules), run alternately so drift on a shared machine hits both alike, and one table per benchmark of the
// median of each figure before and after, flagging those the after made worse by more than --threshold % (5).
//
//   node scripts/bench-compare.mjs --before /work/bench-before --after /work/main \
//     [--benches overhead,scale,streaming] [--rounds 3] [--threshold 5] [--out DIR] \
//     [--args-overhead "--calls 2000 --rounds 10"] [--args-scale "..."] [--args-streaming "..."]
//
// Each run is `npm run --silent bench:<name> -- <args>` in the tree; its output goes to DIR/<name>-<tree>-<n>.log and
// the bench/results/<name>.json it writes is copied to DIR/<name>-<tree>-<n>.json (both trees write that path in
// their own tree, so it is copied away after every run). Rounds go before, after | after, before | before, after ...
// (the order flips each round, so a steady drift over the runs lands on both sides alike). The results file each
// tree had before the first run is put back after the last one (and on Ctrl-C / SIGTERM), so the trees are left as
// found.
//
// Table columns: the figure (its dotted path in the results JSON), unit, which way is better, the before and after
// medians, the change in % of the before median (of a reference figure for differences, marked *), and range: the
// wider max − min of either side's runs in % of the same base, so a flag "(within range)" says the change is no
// bigger than the run-to-run noise. Figures come in three kinds: headline (the bench's top-level result fields),
// detail (the rest of breakwater's paths) and control (the bare SDK's: machine drift, not counted).
//
// Exit code 0 whatever the figures say (this reports, it does not judge); 1 if a bench run fails, 2 on bad usage.
import { spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const USAGE =
  'usage: node scripts/bench-compare.mjs --before <tree> --after <tree> [--benches overhead,scale,streaming]\n' +
  '         [--rounds 3] [--threshold 5] [--out <dir>] [--args-<bench> "<bench options>"]...';

function fail(message) {
  process.stderr.write(`bench-compare: ${message}\n${USAGE}\n`);
  process.exit(2);
}

// ── options ────────────────────────────────────────────────────────────────────────────────────────────

function parseCli(argv) {
  const o = { benches: ['overhead', 'scale', 'streaming'], rounds: 3, threshold: 5, benchArgs: {} };
  for (let i = 0; i < argv.length; i++) {
    const eq = argv[i].indexOf('=');
    const flag = argv[i].startsWith('--') && eq > 0 ? argv[i].slice(0, eq) : argv[i];
    const inline = flag === argv[i] ? undefined : argv[i].slice(eq + 1);
    // The value is the next word even when it starts with `--` (`--args-overhead "--calls 200"`).
    const value = () => inline ?? (i + 1 < argv.length ? argv[++i] : fail(`${flag} needs a value`));
    if (flag === '--help' || flag === '-h') {
      process.stdout.write(`${USAGE}\n`);
      process.exit(0);
    } else if (flag === '--before') o.before = resolve(value());
    else if (flag === '--after') o.after = resolve(value());
    else if (flag === '--benches') o.benches = value().split(',').filter(Boolean);
    else if (flag === '--rounds') o.rounds = Number(value());
    else if (flag === '--threshold') o.threshold = Number(value());
    else if (flag === '--out') o.out = resolve(value());
    else if (flag.startsWith('--args-'))
      o.benchArgs[flag.slice('--args-'.length)] = value().split(/\s+/).filter(Boolean);
    else fail(`unknown option ${argv[i]}`);
  }
  if (!o.before || !o.after) fail('--before and --after are both needed');
  if (!Number.isInteger(o.rounds) || o.rounds < 1) fail('--rounds must be a whole number ≥ 1');
  if (!(o.threshold >= 0)) fail('--threshold must be a number ≥ 0');
  for (const name of Object.keys(o.benchArgs))
    if (!o.benches.includes(name)) fail(`--args-${name} given but ${name} is not in --benches`);
  for (const tree of [o.before, o.after]) {
    const pkgPath = join(tree, 'package.json');
    if (!existsSync(pkgPath)) fail(`${tree}: no package.json`);
    if (!existsSync(join(tree, 'node_modules'))) fail(`${tree}: no node_modules (run npm ci there first)`);
    const scripts = JSON.parse(readFileSync(pkgPath, 'utf8')).scripts ?? {};
    for (const name of o.benches) if (!scripts[`bench:${name}`]) fail(`${tree}: no npm script bench:${name}`);
  }
  o.out ??= join(tmpdir(), `bench-compare-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  return o;
}

// ── running ────────────────────────────────────────────────────────────────────────────────────────────

/** Results files as they were before the first run (null: there was none), put back by restoreResults(). */
const savedResults = new Map();
let running; // the bench child in flight, killed (with its process group) on Ctrl-C / SIGTERM

function saveResults(path) {
  if (!savedResults.has(path)) savedResults.set(path, existsSync(path) ? readFileSync(path) : null);
}

function restoreResults() {
  for (const [path, body] of savedResults) {
    if (body === null) rmSync(path, { force: true });
    else writeFileSync(path, body);
  }
  savedResults.clear();
}

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    if (running) {
      try {
        process.kill(-running.pid, 'SIGTERM');
      } catch {}
    }
    restoreResults();
    process.stderr.write(`\nbench-compare: ${signal}: stopped; results files put back\n`);
    process.exit(130);
  });
}

/** Runs `npm run bench:<name> -- args` in `tree`, output to `logPath`; resolves with the wall time, ms. */
function runBench(tree, name, args, logPath) {
  return new Promise((resolveRun, rejectRun) => {
    const log = createWriteStream(logPath);
    const t0 = performance.now();
    // Its own process group, so a stop here also stops the emulator child the bench starts.
    const child = spawn('npm', ['run', '--silent', `bench:${name}`, '--', ...args], {
      cwd: tree,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    running = child;
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    child.on('error', (error) => {
      running = undefined;
      log.end();
      rejectRun(error);
    });
    child.on('close', (code, signal) => {
      running = undefined;
      log.end(() => {
        if (code === 0) resolveRun(performance.now() - t0);
        else {
          const tail = readFileSync(logPath, 'utf8').trimEnd().split('\n').slice(-25).join('\n');
          rejectRun(new Error(`bench:${name} in ${tree} ended with ${signal ?? `code ${code}`}:\n${tail}`));
        }
      });
    });
  });
}

function gitDescribe(tree) {
  const git = (...args) => spawnSync('git', ['-C', tree, ...args], { encoding: 'utf8' }).stdout.trim();
  const head = git('rev-parse', '--short', 'HEAD') || '?';
  const dirty = git(
    'status',
    '--porcelain',
    '--',
    'src',
    'bench',
    'machines',
    'package.json',
    'package-lock.json',
  );
  const n = dirty ? dirty.split('\n').length : 0;
  return n ? `${head} + ${n} uncommitted change(s) under src/ bench/ machines/ package*.json` : head;
}

// ── figures ────────────────────────────────────────────────────────────────────────────────────────────

// Not figures: what the run was (machine, targets and whether they were met), raw per-round / per-burst samples
// (arrays, and inFlight.samples: the medians beside them are the figures), and configuration echoes or counts that
// follow from it: calls/rounds/agents/tokens asked, the emulator's latency, grants made (a count within a time
// budget, already in grantsPerSec), chunks per call and max in flight (the emulator's answer size and the burst size).
const SKIPPED_SUBTREES = new Set(['machine', 'targets', 'met', 'samples']);
const ECHOES = new Set([
  'calls',
  'rounds',
  'agents',
  'tokens',
  'grants',
  'emulatorLatencyMs',
  'chunksPerCall',
  'maxInFlight',
]);

/** Every numeric leaf of a results JSON that is a measurement, as `dotted.path → value`. */
function figuresOf(json, prefix = '', out = new Map()) {
  for (const [key, value] of Object.entries(json)) {
    if (SKIPPED_SUBTREES.has(key)) continue;
    const path = prefix ? `${prefix}.${key}` : key;
    if (typeof value === 'number') {
      if (!ECHOES.has(key) && Number.isFinite(value)) out.set(path, value);
    } else if (value && typeof value === 'object' && !Array.isArray(value)) figuresOf(value, path, out);
  }
  return out;
}

// Direction, from the figure's name: rates and throughput ratios (…PerSec, …Ratio…: calls/s, grants/s, chunks/s,
// × bare) are better higher; everything else these benches measure is a cost (time …Ms and latency percentiles,
// CPU …Us, memory bytes…, stalls, failed calls), better lower.
const higherIsBetter = (path) => /PerSec$|Ratio/.test(path.split('.').at(-1));

/** The unit, from the leaf's name or else the nearest parent's (latencyMs.p50 → ms). */
function unitOf(path) {
  for (const key of path.split('.').reverse()) {
    if (/PerSec$/.test(key)) return '/s';
    if (/Ratio/.test(key)) return '×';
    if (/^bytes/.test(key)) return 'B';
    if (/Us(PerCall)?$/.test(key)) return 'µs';
    if (/Ms$/.test(key)) return 'ms';
    if (key === 'stalls' || key === 'failed') return 'count';
  }
  return '';
}

// Figures that are differences (breakwater − bare, traced − untraced) sit near zero and change sign run to run, so a
// percentage of their own value means nothing: their change is taken as a percentage of the figure they were added
// to (the before median of it), e.g. addedP50Ms +0.02 ms on a bare p50 of 1.4 ms is +1.4 %.
const REFERENCES = {
  overhead: [
    [/^addedP(\d+)Ms$/, (m) => `perConcurrency.c1.bare.latencyMs.p${m[1]}`],
    [
      /^perConcurrency\.(c\d+)\.(?:adapterA|a)ddedP(\d+)Ms$/,
      (m) => `perConcurrency.${m[1]}.bare.latencyMs.p${m[2]}`,
    ],
    [/^tracingAddedP(\d+)Ms$/, (m) => `perConcurrency.c1.breakwater.latencyMs.p${m[1]}`],
    [/^tracingAddedCpuUs$/, () => 'perConcurrency.c1.breakwater.clientCpuUsPerCall'],
  ],
  streaming: [[/^ttftAddedP(\d+)Ms$/, (m) => `perConcurrency.c1.bare.ttftMs.p${m[1]}`]],
};

function referenceOf(bench, path) {
  for (const [pattern, ref] of REFERENCES[bench] ?? []) {
    const m = pattern.exec(path);
    if (m) return ref(m);
  }
  return undefined;
}

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/**
 * headline: the bench's top-level result fields (what it prints and checks against targets); control: the bare SDK
 * (no breakwater code on its path, so it moves only with the machine: shown as a drift gauge, not counted);
 * detail: the rest (breakwater's paths per concurrency, heap, grants, in flight).
 */
const kindOf = (path) =>
  !path.includes('.') ? 'headline' : path.split('.').includes('bare') ? 'control' : 'detail';

function compare(bench, beforeRuns, afterRuns, threshold) {
  const figs = (runs) => runs.map((json) => figuresOf(json));
  const before = figs(beforeRuns);
  const after = figs(afterRuns);
  const paths = [...new Set([...before, ...after].flatMap((m) => [...m.keys()]))];
  const valuesOf = (runs, path) => runs.map((m) => m.get(path)).filter((v) => v !== undefined);
  const rows = [];
  const headlineSeries = new Map(
    paths
      .filter((p) => kindOf(p) === 'headline')
      .map((p) => [p, JSON.stringify([before, after].map((side) => valuesOf(side, p)))]),
  );
  for (const path of paths) {
    const kind = kindOf(path);
    const b = valuesOf(before, path);
    const a = valuesOf(after, path);
    // A detail that repeats a headline figure run for run (heap.spawnStopMs, inFlight.breakwater.lagP99Ms): once.
    if (kind !== 'headline' && [...headlineSeries.values()].includes(JSON.stringify([b, a]))) continue;
    const higher = higherIsBetter(path);
    const row = { path, kind, unit: unitOf(path), higher, before: NaN, after: NaN, change: NaN, range: NaN };
    rows.push(row);
    if (b.length === 0 || a.length === 0) continue;
    row.before = median(b);
    row.after = median(a);
    const refPath = referenceOf(bench, path);
    const refValues = refPath ? valuesOf(before, refPath) : [];
    row.ref = refPath && refValues.length ? refPath : undefined;
    const base = row.ref ? Math.abs(median(refValues)) : Math.abs(row.before);
    const delta = row.after - row.before;
    row.change =
      base > 0 ? (delta / base) * 100 : delta === 0 ? 0 : Math.sign(delta) * Number.POSITIVE_INFINITY;
    // Range: the wider (max − min) of the two sides' runs, in % of the same base: a change inside it is noise.
    if (base > 0 && (b.length > 1 || a.length > 1))
      row.range = (Math.max(...[b, a].map((v) => Math.max(...v) - Math.min(...v))) / base) * 100;
    row.worse = higher ? row.change < -threshold : row.change > threshold;
    row.inRange = row.worse && Math.abs(row.change) <= row.range;
  }
  const order = { headline: 0, detail: 1, control: 2 };
  return rows.sort((x, y) => order[x.kind] - order[y.kind]);
}

function num(v) {
  if (!Number.isFinite(v)) return '—';
  if (Math.abs(v) >= 1000) return String(Math.round(v));
  return String(Number(v.toPrecision(4)));
}

function pct(v) {
  if (Number.isNaN(v)) return '—';
  if (!Number.isFinite(v)) return v > 0 ? '+∞' : '−∞';
  return `${v >= 0 ? '+' : ''}${v.toFixed(1)}%`;
}

function printTable(bench, rows, threshold, beforeMs, afterMs) {
  const header = ['figure', 'unit', 'better', 'before', 'after', 'change', 'range', ''];
  const cells = rows.map((r) => [
    `${r.path}${r.ref ? ' *' : ''}`,
    r.unit,
    r.higher ? 'higher' : 'lower',
    num(r.before),
    num(r.after),
    pct(r.change),
    Number.isNaN(r.range) ? '—' : `${r.range.toFixed(1)}%`,
    (r.worse ? (r.kind === 'control' ? `(worse >${threshold}%)` : `WORSE >${threshold}%`) : '') +
      (r.inRange ? ' (within range)' : ''),
  ]);
  const widths = header.map((h, c) => Math.max(h.length, ...cells.map((row) => row[c].length)));
  const line = (row) =>
    row
      .map((cell, c) => (c === 0 || c === 7 ? cell.padEnd(widths[c]) : cell.padStart(widths[c])))
      .join('  ')
      .trimEnd();
  const secs = (ms) => `${(median(ms) / 1000).toFixed(0)} s`;
  console.log(`\n== ${bench} (median run: before ${secs(beforeMs)}, after ${secs(afterMs)}) ==`);
  console.log(line(header));
  let kind;
  rows.forEach((r, i) => {
    if (r.kind !== kind) {
      kind = r.kind;
      if (kind === 'detail') console.log('-- detail');
      if (kind === 'control')
        console.log('-- bare SDK: control (no breakwater code; moves with the machine; not counted)');
    }
    console.log(line(cells[i]));
  });
  const refs = rows.filter((r) => r.ref);
  if (refs.length)
    console.log(
      '* a difference figure: its change is in % of the before median of ' +
        refs.map((r) => `${r.path} → ${r.ref}`).join('; '),
    );
}

// ── main ───────────────────────────────────────────────────────────────────────────────────────────────

async function main() {
  const o = parseCli(process.argv.slice(2));
  mkdirSync(o.out, { recursive: true });
  const trees = { before: o.before, after: o.after };
  console.log(`before: ${o.before} at ${gitDescribe(o.before)}`);
  console.log(`after:  ${o.after} at ${gitDescribe(o.after)}`);
  console.log(
    `benches ${o.benches.join(', ')}; ${o.rounds} run(s) per tree each; load ${loadavg()[0].toFixed(2)}; runs kept in ${o.out}`,
  );
  // Counts per kind: [worse by more than the threshold, compared]; and the worse figures that sit within their range.
  const tally = { headline: [0, 0], detail: [0, 0], control: [0, 0] };
  let inRange = 0;
  const worseHeadlines = [];
  const failures = [];
  for (const bench of o.benches) {
    const args = o.benchArgs[bench] ?? [];
    const runs = { before: [], after: [] };
    const ms = { before: [], after: [] };
    for (const side of ['before', 'after'])
      saveResults(join(trees[side], 'bench', 'results', `${bench}.json`));
    try {
      for (let r = 1; r <= o.rounds; r++) {
        for (const side of r % 2 === 1 ? ['before', 'after'] : ['after', 'before']) {
          const resultPath = join(trees[side], 'bench', 'results', `${bench}.json`);
          rmSync(resultPath, { force: true });
          const stem = join(o.out, `${bench}-${side}-${r}`);
          const took = await runBench(trees[side], bench, args, `${stem}.log`);
          if (!existsSync(resultPath))
            throw new Error(
              `bench:${bench} in ${trees[side]} wrote no ${resultPath} (a partial run? see ${stem}.log)`,
            );
          copyFileSync(resultPath, `${stem}.json`);
          const json = JSON.parse(readFileSync(resultPath, 'utf8'));
          runs[side].push(json);
          ms[side].push(took);
          console.log(
            `${bench} ${side.padEnd(6)} ${r}/${o.rounds}  ${(took / 1000).toFixed(1).padStart(6)} s  ` +
              `load ${json.machine?.loadAverage ?? '?'}`,
          );
        }
      }
    } catch (error) {
      failures.push(bench);
      process.stderr.write(`bench-compare: ${error.message}\n`);
      restoreResults();
      continue;
    }
    restoreResults();
    const rows = compare(bench, runs.before, runs.after, o.threshold);
    printTable(bench, rows, o.threshold, ms.before, ms.after);
    for (const r of rows) {
      tally[r.kind][1]++;
      if (!r.worse) continue;
      tally[r.kind][0]++;
      if (r.kind !== 'control' && r.inRange) inRange++;
      if (r.kind === 'headline') worseHeadlines.push(`${bench}.${r.path} ${pct(r.change)}`);
    }
  }
  console.log();
  if (failures.length) console.log(`FAILED runs: ${failures.join(', ')} (no table for them)`);
  if (worseHeadlines.length) console.log(`headline figures worse: ${worseHeadlines.join(', ')}`);
  const [h, d, c] = [tally.headline, tally.detail, tally.control];
  console.log(
    `${h[0] + d[0]} of ${h[1] + d[1]} figures worse by more than ${o.threshold}% (${inRange} of those within ` +
      `their run-to-run range): headline ${h[0]} of ${h[1]}, detail ${d[0]} of ${d[1]}; ` +
      `bare-SDK controls, not counted: ${c[0]} of ${c[1]} (machine drift)`,
  );
  process.exit(failures.length ? 1 : 0);
}

await main();
