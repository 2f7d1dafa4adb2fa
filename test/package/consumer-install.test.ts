import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../src/report/report-types.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { perFileDatabase, postgresUrl } from '../support/coordination-env.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
// At most 24 PostgreSQL connections at once: the installed CLI's two workers and their parent (measured peak, with room).
perFileDatabase({ connections: 24 });

/*
 * breakwater as a user gets it: `npm pack` the package, install the tarball into a fresh project (offline, from
 * the npm cache, with only its runtime dependencies), then use it there with plain node, the consumer's own strict
 * tsc, and the installed `breakwater` command. Nothing of the repository is visible to the consumer.
 */

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');
// From the npm cache (`npm ci` filled it); the registry only for metadata the cache lacks.
const NPM_INSTALL = ['--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'];

let work: string;
let app: string;
let pack: {
  filename: string;
  entryCount: number;
  unpackedSize: number;
  size: number;
  files: { path: string }[];
};

async function sh(file: string, args: string[], cwd: string) {
  return run(file, args, { cwd, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, NODE_OPTIONS: '' } });
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'breakwater-consumer-'));
  // The build the tarball ships (`prepare` made it on `npm ci`; rebuilt only if a source changed since), then the
  // tarball itself.
  await sh(process.execPath, [join(ROOT, 'scripts', 'build-dist.mjs'), '--if-stale'], ROOT);
  const packed = await sh('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], ROOT);
  pack = (JSON.parse(packed.stdout) as (typeof pack)[])[0]!;
  console.log(
    `breakwater tarball: ${pack.entryCount} files, ${(pack.size / 1e6).toFixed(2)} MB packed, ` +
      `${(pack.unpackedSize / 1e6).toFixed(2)} MB unpacked (${pack.filename})`,
  );
  app = join(work, 'app');
  rmSync(app, { recursive: true, force: true });
  await sh('mkdir', ['-p', app], work);
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module', version: '1.0.0' }),
  );
  // The consumer's own choices besides breakwater: Node's types for its tsc, and the AI SDK's provider spec
  // (breakwater/ai-sdk's optional peer; its declarations need @types/json-schema) so the typecheck covers that
  // subpath too.
  await sh(
    'npm',
    [
      'install',
      ...NPM_INSTALL,
      join(work, pack.filename),
      '@types/node@20.19.43',
      '@ai-sdk/provider@3.0.19',
      '@types/json-schema@7.0.15',
    ],
    app,
  );
}, 600_000);

// The consumer's node_modules holds thousands of files: deleting them synchronously blocked the worker past the
// hook timeout on a loaded CI machine (CI run of 819452f). Deleted asynchronously, with room; the verdict is the
// tests', not the clean-up's.
afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true, maxRetries: 3 });
}, 600_000);

describe('the packed breakwater, installed in a fresh project', () => {
  it('ships only what runs: dist, the scenarios, package.json and the README', () => {
    const installed = join(app, 'node_modules', 'breakwater');
    expect(readdirSync(installed).sort()).toEqual(['README.md', 'dist', 'package.json', 'scenarios']);
    expect(existsSync(join(installed, 'src'))).toBe(false);
    expect(existsSync(join(installed, 'dist', 'src', 'viz', 'page', 'viz-page.js'))).toBe(true);
    // Build tools and test tools are not runtime dependencies; the optional peer `ai` is not pulled in.
    for (const dev of ['tsx', 'esbuild', 'vitest', 'typescript', '@types/pg', 'ai'])
      expect(existsSync(join(app, 'node_modules', dev)), dev).toBe(false);
    const paths = pack.files.map((f) => f.path);
    expect(paths.filter((p) => !/^(dist\/|scenarios\/|package\.json$|README\.md$)/.test(p))).toEqual([]);
    expect(paths.filter((p) => /\.ts$/.test(p) && !p.endsWith('.d.ts'))).toEqual([]);
    expect(paths).toContain('scenarios/agent8-storm/scenario.yaml');
  });

  it('(a) plain node imports breakwater and breakwater/emulator and runs a call (429 primary → backup)', async () => {
    writeFileSync(
      join(app, 'call.mjs'),
      `import { createSupervisor, isConfigError } from 'breakwater';
import { startEmulator } from 'breakwater/emulator';
import { listScenarios, loadScenario } from 'breakwater/store';
const emulator = await startEmulator({ profile: { seed: 1 } });
emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, retryAfterMs: 30000 });
const supervisor = createSupervisor({
  endpoints: [
    { id: 'primary', provider: 'anthropic', model: 'claude-sonnet-4-6', apiKey: 'sk-ant-consumer-0001', baseURL: emulator.baseURL('anthropic') },
    { id: 'backup', provider: 'openai', model: 'gpt-4o-mini', apiKey: 'sk-consumer-0002', baseURL: emulator.baseURL('openai') },
  ],
  chains: { main: ['primary', 'backup'] },
});
const turn = await supervisor.call({ chain: 'main', messages: [{ role: 'user', content: 'hello' }] });
await supervisor.stop();
await emulator.close();
const scenarios = listScenarios();
const storm = loadScenario('agent8-storm');
console.log(JSON.stringify({ outcome: turn.outcome, endpointId: turn.endpointId, faults: turn.faults.map((f) => f.kind),
  text: turn.answer.text, guard: typeof isConfigError, scenarios, storm: storm.name }));
`,
    );
    const { stdout } = await sh(process.execPath, ['call.mjs'], app);
    const out = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(out).toMatchObject({
      outcome: 'fallback',
      endpointId: 'backup',
      faults: ['rate_limited'],
      guard: 'function',
      // Every scenario the repository ships, as the installed package lists them.
      scenarios: readdirSync(join(ROOT, 'scenarios'), { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => e.name)
        .sort(),
      storm: 'agent8-storm',
    });
    expect(out.text).toContain('gpt-4o-mini');
  });

  it('(b) the consumer tsc (strict, NodeNext, exactOptionalPropertyTypes, skipLibCheck false) reports 0 errors', async () => {
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          exactOptionalPropertyTypes: true,
          noUncheckedIndexedAccess: true,
          noPropertyAccessFromIndexSignature: true,
          skipLibCheck: false,
          noEmit: true,
          types: ['node'],
        },
        files: ['app.ts'],
      }),
    );
    writeFileSync(
      join(app, 'app.ts'),
      `import { z } from 'zod';
import { createSupervisor, defineAgent, defineTool, isAgentStoppedError, isConfigError, type Turn } from 'breakwater';
import { startEmulator, type EmulatorStats } from 'breakwater/emulator';
import { createRunStore, openDatabase } from 'breakwater/store';
import { createManualClock, startEmulatorFixture } from 'breakwater/testing';
import { createLiveSource, startVizServer } from 'breakwater/viz';
import { createBreakwater, type BreakwaterMetadata } from 'breakwater/ai-sdk';
import { createBreakwaterMetrics, startMetricsServer } from 'breakwater/observability';
import { planSchedule, type PlanResult } from 'breakwater/planner';
import { isCoordinationUnavailableError, type CoordinationOptions } from 'breakwater/coordination';


const fixture = await startEmulatorFixture({ clock: createManualClock(0) });
const supervisor = createSupervisor({
  endpoints: [fixture.endpoint('primary', 'anthropic'), fixture.endpoint('backup', 'openai')],
  chains: { premium: ['primary', 'backup'] },
});
const quote = defineTool({
  description: 'rate',
  parameters: z.object({ pair: z.enum(['EURUSD']) }),
  run: async ({ pair }) => ({ pair, rate: 1.08 }),
});
const agent = supervisor.spawnAgent(defineAgent({ name: 'fx', chain: 'premium', tools: { quote } }));
const turn: Turn = await agent.ask('EURUSD?', { signal: AbortSignal.timeout(1000) });
const call: Turn = await supervisor.call({ chain: 'premium', messages: [{ role: 'user', content: 'x' }] });
const model = createBreakwater(supervisor)('premium');
const meta: BreakwaterMetadata | undefined = undefined;
const emulator = await startEmulator();
const stats: EmulatorStats = emulator.stats();
const db = await openDatabase({ dataDir: ':memory:' });
const store = createRunStore(db);
const viz = await startVizServer({ live: createLiveSource(supervisor), store });
const metrics = createBreakwaterMetrics(supervisor);
const metricsServer = await startMetricsServer(metrics.registry, { port: 0 });
const planned: PlanResult | undefined = typeof planSchedule === 'function' ? undefined : undefined;
const coordination: CoordinationOptions = { backend: 'memory' };
console.log(turn.outcome, call.endpointId, model.modelId, meta, stats.totalCalls, viz.url, isConfigError, isAgentStoppedError, metricsServer.url, planned, coordination, isCoordinationUnavailableError);
`,
    );
    // zod is breakwater's dependency; the consumer uses it for its tool schema as it would after installing it.
    const result = await sh(process.execPath, [TSC, '-p', 'tsconfig.json'], app).catch(
      (e: { stdout?: string; code?: number }) => ({ stdout: e.stdout ?? String(e), stderr: '' }),
    );
    expect(result.stdout).toBe('');
    // A whole-program typecheck of every declaration installed (skipLibCheck false): ~20 s on a quiet 2-core
    // machine, several times that beside another CPU-heavy process. A bound, not a speed check.
  }, 240_000);

  it('(c) npx breakwater --version and npx breakwater run --help work', async () => {
    const version = await sh('npx', ['--offline', 'breakwater', '--version'], app);
    expect(version.stdout.trim()).toBe('0.1.0');
    const help = await sh('npx', ['--offline', 'breakwater', 'run', '--help'], app);
    expect(help.stdout).toContain('Usage: breakwater run');
    expect(help.stdout).toContain('--policy');
  }, 120_000);
});

describe('the installed breakwater spreads a run over worker processes', () => {
  /** `npx breakwater …` in the consumer project; resolves with the exit code and both outputs, never rejects. */
  const npx = (args: string[]) =>
    sh('npx', ['--offline', 'breakwater', ...args], app).then(
      (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code?: number; stdout?: string; stderr?: string }) => ({
        code: typeof e.code === 'number' ? e.code : -1,
        stdout: e.stdout ?? '',
        stderr: e.stderr ?? String(e),
      }),
    );

  it('(d) npx breakwater run agent8-storm --workers 2 runs its workers from the package and passes', async () => {
    // The installed package's own agent8-storm (three rounds at timeScale 15: about a minute). morning-peak with
    // workers is judged from the sources by test/workers/morning-peak-workers.test.ts; here the point is that the
    // installed CLI starts its workers from the package and they finish a run that passes its checks, and 150
    // simulated minutes of morning-peak would cost this file two and a half minutes of wall time for it.
    const run = await npx([
      'run',
      'agent8-storm',
      '--workers',
      '2',
      '--database-url',
      postgresUrl(),
      '--json',
    ]);
    expect(run.stderr).not.toMatch(/Error|Cannot find/);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout.trim().split('\n').pop()!) as RunReport;
    expect(report.status).toBe('completed');
    expect(report.checks.filter((c) => c.threshold !== null && c.pass === false)).toEqual([]);
    expect(report.allPassed).toBe(true);
    // Both workers asked turns, and theirs add up to every turn of the run.
    const byWorker = report.byWorker ?? {};
    expect(Object.keys(byWorker)).toHaveLength(2);
    expect(Object.values(byWorker).reduce((a, b) => a + b, 0)).toBe(report.turns.total);
  }, 300_000);

  it('(e) a worker that dies at start (a corrupt worker command in the package): its stderr shown, the run failed, exit 1', async () => {
    // Only the worker loads this module (the parent runs `run`): the parent starts, the workers die loading it.
    const module = join(
      app,
      'node_modules',
      'breakwater',
      'dist',
      'src',
      'cli',
      'commands',
      'worker-command.js',
    );
    const original = readFileSync(module, 'utf8');
    const runId = `consumer-dead-worker-${process.pid}`;
    writeFileSync(module, `throw new Error('worker entry corrupt on purpose');\n${original}`);
    let run: Awaited<ReturnType<typeof npx>>;
    try {
      run = await npx([
        'run',
        'morning-peak',
        '--workers',
        '2',
        '--database-url',
        postgresUrl(),
        '--run-id',
        runId,
        '--no-live',
      ]);
    } finally {
      writeFileSync(module, original);
    }
    expect(run.code).toBe(1);
    // The worker's own stderr, then one line saying which worker died, why, and what became of the run.
    expect(run.stderr).toMatch(/^worker \d of 2 \(pid \d+\) exited with code 1; its stderr:$/m);
    expect(run.stderr).toMatch(/^ {2}\| Error: worker entry corrupt on purpose$/m);
    const last = run.stderr.trimEnd().split('\n').pop()!;
    expect(last).toMatch(
      new RegExp(
        `^breakwater run: run ${runId} failed: worker \\d of 2 \\(pid \\d+\\) exited with code 1 before it joined the run: Error: worker entry corrupt on purpose; `,
      ),
    );
    expect(last).not.toMatch(/^\(?Node\.js v/);
    const database = await openDatabase({ url: postgresUrl() });
    try {
      const stored = await createRunStore(database).getRun(runId);
      expect(stored?.status).toBe('failed');
      expect(stored?.failure).toContain('worker entry corrupt on purpose');
    } finally {
      await database.close();
    }
  }, 180_000);
});
