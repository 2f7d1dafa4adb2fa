/**
 * bench:overhead — what breakwater adds on top of the bare SDK.
 *
 * The clients call the same emulator (its own process, zero latency, quotas so large they never
 * bind) with the same request, in interleaved rounds so drift on a shared machine hits all of them alike:
 * - `bare`: the OpenAI SDK as a user would call it (`chat.completions.create`);
 * - `adapter`: `createEngine(...).call()` — the unified adapter alone (deadlines, classification);
 * - `breakwater`: `agent.ask()` — agent actor → supervisor token → breaker → buckets → adapter → SDK.
 * - `traced`: the `breakwater` path with OpenTelemetry tracing on (spans into the SDK's in-memory exporter);
 * - `runtime` (diagnostic): the same `agent.ask()` path over an in-memory engine that answers at once —
 *   the actors' own cost per call, with no HTTP at all.
 * Latency is measured per call at concurrency 1 (added p50/p99 = breakwater − bare), throughput at
 * concurrency 32 (calls/s of breakwater ÷ bare).
 *
 * Run: `npm run bench:overhead` (options: `--calls 5000 --rounds 10 --warmup 300`).
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import OpenAI from 'openai';
import { createEngine } from '../src/engines/create-engine.ts';
import { describeEndpoint, type ParsedEndpointConfig } from '../src/engines/endpoint-config.ts';
import type { Engine, EngineResult } from '../src/core/engine-types.ts';
import { createSupervisor, type Supervisor } from '../src/runtime/create-supervisor.ts';
import { row, writeResult } from './lib/bench-result.ts';
import { processCpuMicros } from './lib/process-cpu.ts';
import { type EmulatorProcess, startEmulatorProcess } from './lib/emulator-process.ts';
import { mean, percentile, round, summarize } from './lib/stats.ts';

const { values: args } = parseArgs({
  options: {
    calls: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '300' },
    // For profiling one path: `--modes breakwater --concurrency 32` under `node --cpu-prof`.
    modes: { type: 'string', default: 'bare,adapter,breakwater,runtime,traced' },
    concurrency: { type: 'string', default: '1,32' },
  },
});
const CALLS = Number(args.calls);
const ROUNDS = Number(args.rounds);
const WARMUP = Number(args.warmup);
const CONCURRENCIES = args.concurrency.split(',').map(Number);
const MODEL = 'gpt-4o-mini';
const KEY = 'sk-bench-overhead-0001';
const MAX_TOKENS = 64;
// A realistic short agent prompt (~400 chars), identical on every path.
const PROMPT =
  'Agenda item U03: the overnight settlement batch for the APAC desk finished 40 minutes late and two ' +
  'downstream reports were published with stale FX rates. Give your assessment in three bullet points: ' +
  'the most likely cause, the immediate mitigation, and what to check before tomorrow morning. Keep it ' +
  'under 80 words and name one owner for each action.';

type Mode = 'bare' | 'adapter' | 'breakwater' | 'runtime' | 'traced';
const MODES = args.modes.split(',') as Mode[];
// The OpenTelemetry SDK is an optional dependency: loaded only when the `traced` mode runs.
const otelSdk = MODES.includes('traced') ? await import('@opentelemetry/sdk-trace-base') : undefined;

/** One client under test: `call(i)` makes call number `i` with worker `w`. */
interface Client {
  call(w: number, i: number): Promise<void>;
  close(): Promise<void>;
}

function bareClient(emu: EmulatorProcess): Client {
  const sdk = new OpenAI({ apiKey: KEY, baseURL: emu.baseURL('openai') });
  return {
    async call(_w, i) {
      await sdk.chat.completions.create(
        { model: MODEL, messages: [{ role: 'user', content: PROMPT }], max_completion_tokens: MAX_TOKENS },
        { headers: { 'Idempotency-Key': `bare-${i}` } },
      );
    },
    close: async () => {},
  };
}

function adapterClient(emu: EmulatorProcess): Client {
  const engine: Engine = createEngine({
    id: 'emulated-openai',
    provider: 'openai',
    model: MODEL,
    apiKey: KEY,
    baseURL: emu.baseURL('openai'),
  });
  return {
    async call(_w, i) {
      await engine.call({
        messages: [{ role: 'user', content: PROMPT }],
        maxTokens: MAX_TOKENS,
        idempotencyKey: `adapter-${i}`,
      });
    },
    close: async () => {},
  };
}

/**
 * A fresh supervisor with one agent per worker. Tokens ≥ concurrency and an endpoint without limits:
 * what is measured is the path's cost, not pacing. `historyTurns: 0` so the prompt is the bare one.
 */
function breakwaterClient(emu: EmulatorProcess, workers: number, inMemory = false, traced = false): Client {
  // `traced`: spans of every turn and attempt through the OpenTelemetry SDK into its in-memory exporter.
  const exporter = traced && otelSdk ? new otelSdk.InMemorySpanExporter() : undefined;
  const tracing = exporter
    ? {
        tracing: {
          tracer: new otelSdk!.BasicTracerProvider({
            spanProcessors: [new otelSdk!.SimpleSpanProcessor(exporter)],
          }).getTracer('bench'),
        },
      }
    : {};
  const supervisor: Supervisor = createSupervisor(
    {
      endpoints: [
        {
          id: 'emulated-openai',
          provider: 'openai',
          model: MODEL,
          apiKey: KEY,
          baseURL: emu.baseURL('openai'),
        },
      ],
      chains: { main: ['emulated-openai'] },
      concurrency: { limit: Math.max(64, workers) },
      agentDefaults: { maxTokens: MAX_TOKENS, historyTurns: 0 },
    },
    { ...(inMemory ? { createEngine: instantEngine } : {}), ...tracing },
  );
  const agents = Array.from({ length: workers }, (_, w) =>
    supervisor.spawnAgent({ name: `agent-${w}`, chain: 'main' }),
  );
  return {
    async call(w, i) {
      const turn = await agents[w]!.ask(PROMPT, { turnId: `t-${i}` });
      if (turn.outcome !== 'answered')
        throw new Error(`turn ${i} ended ${turn.outcome}: ${turn.error ?? ''}`);
    },
    close: async () => {
      await supervisor.stop();
      exporter?.reset();
    },
  };
}

/** An engine that answers at once from memory: isolates the actors' cost from HTTP and the SDK. */
function instantEngine(config: ParsedEndpointConfig): Engine {
  const endpoint = describeEndpoint(config);
  const result: EngineResult = Object.freeze({
    text: 'ok',
    toolCalls: [],
    stopReason: 'end_turn',
    usage: { inputTokens: 110, outputTokens: 40, source: 'reported' as const },
    endpoint,
    model: MODEL,
    rateLimit: {},
    latencyMs: 0,
  });
  return { endpoint, call: async () => result };
}

function makeClient(mode: Mode, emu: EmulatorProcess, workers: number): Client {
  if (mode === 'bare') return bareClient(emu);
  if (mode === 'adapter') return adapterClient(emu);
  return breakwaterClient(emu, workers, mode === 'runtime', mode === 'traced');
}

/** Runs `calls` calls over `workers` concurrent loops; returns per-call latencies (ms) and wall time (ms). */
async function drive(
  client: Client,
  calls: number,
  workers: number,
  seq: { next: number },
): Promise<{ latencies: number[]; wallMs: number }> {
  const latencies: number[] = [];
  let issued = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      while (issued < calls) {
        issued++;
        const i = seq.next++;
        const s = performance.now();
        await client.call(w, i);
        latencies.push(performance.now() - s);
      }
    }),
  );
  return { latencies, wallMs: performance.now() - t0 };
}

interface ModeSample {
  latencies: number[];
  wallMs: number;
  calls: number;
  /** CPU used by this (client) process and by the emulator's, µs, over the measured calls. */
  clientCpuUs: number;
  emulatorCpuUs: number;
}

async function measure(emu: EmulatorProcess, workers: number): Promise<Record<Mode, ModeSample>> {
  const seq = { next: 0 };
  const samples = Object.fromEntries(
    MODES.map((m) => [
      m,
      { latencies: [], wallMs: 0, calls: 0, clientCpuUs: 0, emulatorCpuUs: 0 } as ModeSample,
    ]),
  ) as Record<Mode, ModeSample>;
  for (const mode of MODES) {
    const client = makeClient(mode, emu, workers);
    await drive(client, WARMUP, workers, seq);
    await client.close();
  }
  const perRound = Math.ceil(CALLS / ROUNDS);
  for (let r = 0; r < ROUNDS; r++) {
    // Rotate the order every round so no mode always runs first (or right after a GC-heavy one).
    const order = MODES.map((_, k) => MODES[(k + r) % MODES.length]!);
    for (const mode of order) {
      const client = makeClient(mode, emu, workers);
      const cpu0 = process.cpuUsage();
      const emu0 = processCpuMicros(emu.pid);
      const { latencies, wallMs } = await drive(client, perRound, workers, seq);
      const cpu = process.cpuUsage(cpu0);
      const emuCpu = processCpuMicros(emu.pid) - emu0;
      await client.close();
      const s = samples[mode];
      s.clientCpuUs += cpu.user + cpu.system;
      s.emulatorCpuUs += emuCpu;
      for (const l of latencies) s.latencies.push(l);
      s.wallMs += wallMs;
      s.calls += latencies.length;
    }
    await emu.reset();
    process.stdout.write('.');
  }
  process.stdout.write('\n');
  return samples;
}

async function main(): Promise<void> {
  const emu = await startEmulatorProcess({
    seed: 8,
    latency: { minMs: 0, maxMs: 0 },
    answerTokens: 40,
    defaultQuotas: { rpm: 1_000_000_000, tpm: 1_000_000_000_000 },
  });
  const results: Record<string, Record<Mode, ModeSample>> = {};
  try {
    for (const c of CONCURRENCIES) {
      console.log(`concurrency ${c}: ${CALLS} calls per client in ${ROUNDS} interleaved rounds`);
      results[c] = await measure(emu, c);
    }
  } finally {
    await emu.close();
  }

  const full = MODES.length === 5 && CONCURRENCIES.join(',') === '1,32';
  if (!full) {
    for (const c of CONCURRENCIES)
      for (const m of MODES) {
        const s = results[c]![m];
        console.log(
          `c=${c} ${m}`,
          summarize(s.latencies),
          `${round((s.calls / s.wallMs) * 1000, 1)} calls/s`,
          `cpu/call: client ${round(s.clientCpuUs / s.calls, 0)} µs, emulator ${round(s.emulatorCpuUs / s.calls, 0)} µs`,
        );
      }
    console.log('partial run (profiling): no result written');
    return;
  }

  const view = (c: number, mode: Mode) => {
    const s = results[c]![mode];
    return {
      calls: s.calls,
      latencyMs: summarize(s.latencies),
      meanMs: round(mean(s.latencies)),
      callsPerSec: round((s.calls / s.wallMs) * 1000, 1),
      // Where a call's CPU goes: this process (SDK, adapter, runtime) and the emulator's process.
      clientCpuUsPerCall: round(s.clientCpuUs / s.calls, 0),
      emulatorCpuUsPerCall: round(s.emulatorCpuUs / s.calls, 0),
    };
  };
  const added = (c: number, mode: Mode, p: number) =>
    round(percentile(results[c]![mode].latencies, p) - percentile(results[c]!.bare.latencies, p));
  const ratio = (c: number, mode: Mode) => round(view(c, mode).callsPerSec / view(c, 'bare').callsPerSec);

  const perConcurrency = Object.fromEntries(
    CONCURRENCIES.map((c) => [
      `c${c}`,
      {
        bare: view(c, 'bare'),
        adapter: view(c, 'adapter'),
        breakwater: view(c, 'breakwater'),
        runtimeOnly: view(c, 'runtime'),
        traced: view(c, 'traced'),
        adapterAddedP50Ms: added(c, 'adapter', 50),
        adapterAddedP99Ms: added(c, 'adapter', 99),
        addedP50Ms: added(c, 'breakwater', 50),
        addedP99Ms: added(c, 'breakwater', 99),
        adapterThroughputRatio: ratio(c, 'adapter'),
        throughputRatio: ratio(c, 'breakwater'),
      },
    ]),
  );

  console.log();
  console.log(row('', 'bare SDK', 'adapter', 'breakwater', 'runtime only', 'traced'));
  for (const c of CONCURRENCIES) {
    const v = (m: Mode) => view(c, m);
    const line = (label: string, get: (m: Mode) => number | string) =>
      console.log(row(`c=${c} ${label}`, ...MODES.map(get)));
    line('latency p50 (ms)', (m) => v(m).latencyMs.p50);
    line('latency p99 (ms)', (m) => v(m).latencyMs.p99);
    line('calls/s', (m) => v(m).callsPerSec);
    line('client CPU µs/call', (m) => v(m).clientCpuUsPerCall);
    line('emulator CPU µs/call', (m) => v(m).emulatorCpuUsPerCall);
    line('added p50 vs bare (ms)', (m) => (m === 'runtime' ? '—' : added(c, m, 50)));
    line('added p99 vs bare (ms)', (m) => (m === 'runtime' ? '—' : added(c, m, 99)));
    line('throughput ÷ bare', (m) => (m === 'runtime' ? '—' : ratio(c, m)));
  }

  // Tracing on (spans into the SDK's in-memory exporter) against off (the default: no provider, no tracer).
  const tracingAddedP50Ms = round(
    percentile(results[1]!.traced.latencies, 50) - percentile(results[1]!.breakwater.latencies, 50),
  );
  const tracingAddedCpuUs = round(
    view(1, 'traced').clientCpuUsPerCall - view(1, 'breakwater').clientCpuUsPerCall,
    0,
  );
  const addedP50Ms = added(1, 'breakwater', 50);
  const addedP99Ms = added(1, 'breakwater', 99);
  const throughputRatio = ratio(32, 'breakwater');
  // Issue 34's single-process targets (tracing's is its own).
  const targets = { addedP50Ms: 0.05, addedP99Ms: 0.5, throughputRatio: 0.95, tracingAddedP50Ms: 0.1 };
  const met = {
    tracingAddedP50Ms: tracingAddedP50Ms <= targets.tracingAddedP50Ms,
    addedP50Ms: addedP50Ms <= targets.addedP50Ms,
    addedP99Ms: addedP99Ms <= targets.addedP99Ms,
    throughputRatio: throughputRatio >= targets.throughputRatio,
  };
  console.log();
  console.log(
    `added p50 ${addedP50Ms} ms (target ≤ ${targets.addedP50Ms}: ${met.addedP50Ms ? 'met' : 'MISSED'}), ` +
      `added p99 ${addedP99Ms} ms (target ≤ ${targets.addedP99Ms}: ${met.addedP99Ms ? 'met' : 'MISSED'}), ` +
      `throughput ${throughputRatio}× bare at c=32 (target ≥ ${targets.throughputRatio}: ${met.throughputRatio ? 'met' : 'MISSED'})`,
  );
  console.log(
    `tracing on adds ${tracingAddedP50Ms} ms p50 at c=1 (target ≤ ${targets.tracingAddedP50Ms}: ${met.tracingAddedP50Ms ? 'met' : 'MISSED'}), ${tracingAddedCpuUs} µs of CPU per call; off is the default path (no tracer object at all)`,
  );
  const path = await writeResult('overhead', {
    addedP50Ms,
    addedP99Ms,
    throughputRatio,
    tracingAddedP50Ms,
    tracingAddedCpuUs,
    latencyAt: 'concurrency 1 (added = breakwater − bare, same percentile)',
    throughputAt: 'concurrency 32',
    targets,
    met,
    calls: CALLS,
    rounds: ROUNDS,
    upstream: 'emulator (openai flavor) in its own process, zero latency, one request per connection',
    perConcurrency,
  });
  console.log(`wrote ${path}`);
}

await main();
