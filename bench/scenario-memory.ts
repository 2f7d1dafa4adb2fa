/**
 * bench:scenario-memory — peak memory of a scenario near the 10 MB file limit, as a multiple of the file (issue 42:
 * "a 10 MB scenario peaks at 843 MB RSS; keep peak memory proportional, ≤ 10× the file").
 *
 * For each shape of bench/lib/big-scenario.ts (long item details; many agents with long roles and memory) it writes a
 * ~10 MB file and a ~50 KB one of the same shape, and measures in fresh processes (maxRSS, the kernel's peak):
 * - load: `loadScenario` alone, the peak it adds over the process before it (JSON and YAML forms of the file);
 * - run: `breakwater run <file> --json` on embedded PGlite and the in-process emulator, whole process. The ~50 KB
 *   file's run is the baseline (Node, PGlite, the emulator, the agents' machines); the figure is
 *   (peak − baseline) ÷ file size. The baseline is printed apart.
 *
 * Run: `npm run bench:scenario-memory` (options: `--shape items|agents` for one shape, `--mb 10`).
 * Peak RSS depends on when the garbage collector runs: figures move by a few × between runs; read them as ranges.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { type BigScenarioShape, bigScenario } from './lib/big-scenario.ts';
import { row, writeResult } from './lib/bench-result.ts';

const ROOT = resolve(import.meta.dirname, '..');
const { values: args } = parseArgs({
  options: { shape: { type: 'string' }, mb: { type: 'string', default: '10' } },
});
const SHAPES: BigScenarioShape[] = args.shape ? [args.shape as BigScenarioShape] : ['items', 'agents'];
const BYTES = Number(args.mb) * 1_000_000;
const BASELINE_BYTES = 50_000;
const MB = 1_048_576;

/** Runs `node …argv` and resolves with its stdout and stderr; rejects on a non-zero exit. */
function node(argv: string[]): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, argv, {
      cwd: ROOT,
      env: { ...process.env, NODE_OPTIONS: '', DATABASE_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.once('close', (code) =>
      code === 0
        ? resolvePromise({ stdout, stderr })
        : reject(new Error(`node ${argv.join(' ')} exited ${code}: ${stderr.slice(-2_000)}`)),
    );
  });
}

/** What `loadScenario(file)` adds to a fresh process's peak RSS, in bytes. */
async function loadPeak(file: string): Promise<number> {
  const script = `const { loadScenario } = await import(${JSON.stringify(join(ROOT, 'src/scenarios/load-scenario.ts'))});
const before = process.resourceUsage().maxRSS;
const spec = loadScenario(${JSON.stringify(file)});
console.log(JSON.stringify({ agents: spec.agents.length, added: process.resourceUsage().maxRSS - before }));`;
  const { stdout } = await node(['--import', 'tsx', '--input-type=module', '-e', script]);
  return (JSON.parse(stdout.trim().split('\n').pop()!) as { added: number }).added * 1024;
}

/** The peak RSS of a whole `breakwater run <file>` process, in bytes (its own maxRSS, printed at exit). */
async function runPeak(file: string, dataDir: string): Promise<number> {
  const preload = join(dataDir, '..', 'max-rss.mjs');
  writeFileSync(
    preload,
    "process.on('exit', () => process.stderr.write('\\nMAXRSS ' + process.resourceUsage().maxRSS + '\\n'));\n",
  );
  const { stderr } = await node([
    '--import',
    preload,
    'bin/breakwater.js',
    'run',
    file,
    '--json',
    '--no-stdin',
    '--data-dir',
    dataDir,
  ]);
  const m = /MAXRSS (\d+)/.exec(stderr);
  if (!m) throw new Error(`no MAXRSS line from the run: ${stderr.slice(-2_000)}`);
  return Number(m[1]) * 1024;
}

const dir = mkdtempSync(join(tmpdir(), 'bw-scenario-memory-'));
const results: Record<string, unknown>[] = [];
try {
  console.log(row('shape / step', 'file MB', 'peak MB', 'added MB', '× file'));
  for (const shape of SHAPES) {
    const big = join(dir, `${shape}.json`);
    const bigYaml = join(dir, `${shape}.yaml`);
    const small = join(dir, `${shape}-baseline.json`);
    writeFileSync(big, JSON.stringify(bigScenario(shape, BYTES), null, 1));
    writeFileSync(bigYaml, stringify(bigScenario(shape, BYTES), { lineWidth: 0 }));
    writeFileSync(small, JSON.stringify(bigScenario(shape, BASELINE_BYTES), null, 1));
    const size = statSync(big).size;
    const yamlSize = statSync(bigYaml).size;
    const loadJson = await loadPeak(big);
    const loadYaml = await loadPeak(bigYaml);
    const baseline = await runPeak(small, join(dir, `${shape}-baseline-data`));
    const run = await runPeak(big, join(dir, `${shape}-data`));
    const fig = (n: number) => (n / MB).toFixed(1);
    console.log(row(`${shape} load (JSON)`, fig(size), '', fig(loadJson), (loadJson / size).toFixed(1)));
    console.log(
      row(`${shape} load (YAML)`, fig(yamlSize), '', fig(loadYaml), (loadYaml / yamlSize).toFixed(1)),
    );
    console.log(row(`${shape} run baseline (50 KB file)`, '', fig(baseline), '', ''));
    console.log(
      row(`${shape} run`, fig(size), fig(run), fig(run - baseline), ((run - baseline) / size).toFixed(1)),
    );
    results.push({
      shape,
      fileBytes: size,
      yamlFileBytes: yamlSize,
      loadJsonAddedBytes: loadJson,
      loadJsonTimesFile: Math.round((loadJson / size) * 10) / 10,
      loadYamlAddedBytes: loadYaml,
      loadYamlTimesFile: Math.round((loadYaml / yamlSize) * 10) / 10,
      runBaselinePeakBytes: baseline,
      runPeakBytes: run,
      runTimesFile: Math.round(((run - baseline) / size) * 10) / 10,
    });
  }
  console.log(`\nwritten: ${await writeResult('scenario-memory', { target: '≤ 10× the file', results })}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
