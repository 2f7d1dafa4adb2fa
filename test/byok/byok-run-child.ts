/**
 * The end-to-end canary run, in its own process (`node --expose-gc --import tsx`) so its V8 heap holds
 * only the runtime, the SDKs, undici, PGlite and the visualizer. It runs a scenario through
 * `runScenario` (the path `breakwater run` takes) on a PGlite data directory, against the parent's
 * emulator, with logs captured (`createLogger({ level: 'info', destination })`) and the visualizer feed
 * captured twice: the live source's own subscription and the server's SSE stream. Mid-start, a bad and a
 * good canary key are typed into the `/byok` console; the platform's credit runs out and the agents go
 * on with the good key; after the last turn the session ends (the key is wiped); once everything is
 * closed a heap snapshot is written. It prints one JSON line: what it logged, printed, saw in the feed,
 * the snapshots it read, every error message, and the heap snapshot's path; the parent searches all of
 * it, and every table of the database, for the canaries.
 *
 * argv[2]: JSON `{ seed, dataDir, emulatorUrl, snapshotDir }`.
 */
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { writeHeapSnapshot } from 'node:v8';
import { startByokConsole } from '../../src/byok/byok-console.ts';
import { createLogger } from '../../src/logging/logger.ts';
import type { BreakwaterExecutor } from '../../src/runs/breakwater-executor.ts';
import { runScenario } from '../../src/runs/run-scenario.ts';
import type { Supervisor } from '../../src/runtime/create-supervisor.ts';
import { parseScenario } from '../../src/scenarios/load-scenario.ts';
import { createLiveSource, type LiveSource } from '../../src/viz/live-source.ts';
import { startVizServer, type VizServer } from '../../src/viz/viz-server.ts';
import { canaryKeyBytes } from './byok-canary.ts';
import { CANARY_RUN_SPEC } from './byok-run-spec.ts';

interface ChildInput {
  seed: string;
  dataDir: string;
  emulatorUrl: string;
  snapshotDir: string;
}

const input = JSON.parse(process.argv[2] ?? '{}') as ChildInput;
const logs: string[] = [];
const printed: string[] = [];
const errors: string[] = [];
const feed: string[] = [];
const sse: string[] = [];
const snapshots: string[] = [];
const logger = createLogger({ level: 'info', destination: { write: (line: string) => logs.push(line) } });

function recordError(e: unknown): void {
  const err = e as Error;
  errors.push(String(err?.message ?? err), String(err?.stack ?? ''));
}

/** Reads the visualizer's SSE stream into `sse` until aborted. */
function readSse(url: string, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    fetch(new URL('/api/live', url), { signal })
      .then(async (res) => {
        if (!res.body) throw new Error('no SSE body');
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        resolve();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          sse.push(value);
        }
      })
      .catch((e: unknown) => {
        if (!signal.aborted) recordError(e);
        reject(e);
      });
  });
}

/** Types `/byok openai KEY` lines into the console, from buffers of their own that are wiped after. */
async function typeKeys(console: ReturnType<typeof startByokConsole>, stdin: PassThrough): Promise<void> {
  const lines = (['bad', 'good'] as const).map((kind) => {
    const key = canaryKeyBytes(input.seed, 'openai', kind);
    const buf = Buffer.concat([Buffer.from('/byok openai '), key, Buffer.from('\n')], 128).subarray(
      0,
      key.length + 14,
    );
    key.fill(0);
    return buf;
  });
  // One at a time, so the console's answers come in a known order.
  for (const buf of lines) {
    stdin.write(buf);
    await new Promise((resolve) => setImmediate(resolve));
    await console.settled();
  }
  for (const buf of lines) buf.fill(0);
}

async function gcAndSnapshot(name: string): Promise<string> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  // Leave the socket-read callbacks whose promise chains resumed us, then collect.
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setTimeout(resolve, 50));
  gc();
  gc();
  return writeHeapSnapshot(join(input.snapshotDir, `${name}.heapsnapshot`));
}

async function run(): Promise<{ runId: string; status: string }> {
  const stdin = new PassThrough();
  let supervisor: Supervisor | undefined;
  let executor: BreakwaterExecutor | undefined;
  let source: LiveSource | undefined;
  let viz: VizServer | undefined;
  let console: ReturnType<typeof startByokConsole> | undefined;
  const sseStop = new AbortController();
  let sseDone: Promise<void> | undefined;
  let agents: string[] = [];
  try {
    const result = await runScenario({
      scenario: parseScenario(JSON.stringify(CANARY_RUN_SPEC), 'byok-canary-run.json'),
      dataDir: input.dataDir,
      emulatorUrl: input.emulatorUrl,
      logger,
      onStart: async (ctx) => {
        executor = ctx.executor as BreakwaterExecutor;
        supervisor = executor.supervisor;
        agents = ctx.agents.map((a) => a.name);
        source = createLiveSource(supervisor, { runId: ctx.runId, store: ctx.store, sampleIntervalMs: 0 });
        source.subscribe((e) => feed.push(JSON.stringify(e)));
        viz = await startVizServer({ port: 0, live: source, store: ctx.store });
        sseDone = readSse(viz.url, sseStop.signal);
        await sseDone;
        console = startByokConsole({ input: stdin, byok: supervisor.byok, print: (l) => printed.push(l) });
        await typeKeys(console, stdin);
      },
      onProgress: (p) => {
        if (p.round !== p.rounds || p.done !== p.total || !executor || !supervisor) return;
        for (const a of agents) snapshots.push(JSON.stringify(executor.persistedSnapshot(a) ?? null));
        snapshots.push(JSON.stringify(supervisor.actor.getPersistedSnapshot()));
        snapshots.push(JSON.stringify(executor.health()), JSON.stringify(supervisor.byok.list()));
        // The user's session is over: its key is wiped now, before the run's last commit.
        supervisor.byok.endSession('default');
      },
    });
    // A closed runtime refuses a key without touching it; its message is searched like every other.
    try {
      const key = canaryKeyBytes(input.seed, 'openai');
      try {
        await supervisor?.byok.inject('default', 'openai', key);
      } finally {
        key.fill(0);
      }
      errors.push('UNEXPECTED: a stopped runtime took a key');
    } catch (e) {
      recordError(e);
    }
    return { runId: result.runId, status: result.run.status };
  } catch (e) {
    recordError(e);
    throw e;
  } finally {
    console?.stop();
    stdin.destroy();
    source?.close();
    sseStop.abort();
    await viz?.close();
  }
}

async function main(): Promise<void> {
  const { runId, status } = await run();
  const heapSnapshot = await gcAndSnapshot('after-expiry');
  process.stdout.write(
    `${JSON.stringify({ runId, status, logs, printed, errors, feed, sse, snapshots, heapSnapshot })}\n`,
  );
}

main().catch((e) => {
  process.stderr.write(`byok run child failed: ${(e as Error).stack}\n`);
  process.exit(1);
});
