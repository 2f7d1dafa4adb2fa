/**
 * bench:scale — how far one process goes.
 *
 * 1. Heap per idle agent: 10,000 agents spawned through `supervisor.spawnAgent()` (actor + handle), heap
 *    measured after `global.gc()` before and after, and again once each did one turn; the bare agent actor
 *    (`createActor(agentMachine)`, its own actor system) beside it. Spawning and stopping them, timed.
 * 2. Token grants per second. Primary figure: the token scheduler itself (real endpoint registry and health,
 *    retry budget, timer heap) with N contenders each acquiring, releasing with a success and asking again, so
 *    N − 3 requests wait at every moment; N = 10, 1,000, 10,000. Beside it: the same contention through
 *    `agent.ask()` with real agent actors and an in-memory engine (one grant per turn, no HTTP).
 * 3. 1,000 calls in flight against the emulator (its own process, 1.5 s latency so they overlap): event-loop
 *    lag p99 (`perf_hooks.monitorEventLoopDelay`) while they run, through breakwater and, side by side,
 *    through the bare SDK.
 *
 * Run: `npm run bench:scale` (node --expose-gc). Options: `--agents 10000 --grants 200000 --inflight 1000`.
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import OpenAI from 'openai';
import { createActor } from 'xstate';
import { agentMachine } from '../machines/agent.machine.ts';
import { systemClock } from '../src/clock/clock.ts';
import { describeEndpoint, type ParsedEndpointConfig } from '../src/engines/endpoint-config.ts';
import type { Engine, EngineResult } from '../src/core/engine-types.ts';
import { RetryBudget } from '../src/resilience/retry-budget.ts';
import { createSupervisor } from '../src/runtime/create-supervisor.ts';
import { EndpointRegistry } from '../src/health/endpoint-registry.ts';
import { MemoryTokenScheduler } from '../src/scheduler/memory-token-scheduler.ts';
import { TimerHeap } from '../src/clock/timer-heap.ts';
import { defineConfig, type RuntimeConfigInput } from '../src/runtime/runtime-config.ts';
import { emptyMemory } from '../src/core/turn.ts';
import { row, writeResult } from './lib/bench-result.ts';
import { startEmulatorProcess } from './lib/emulator-process.ts';
import { round } from './lib/stats.ts';

const { values: args } = parseArgs({
  options: {
    agents: { type: 'string', default: '10000' },
    grants: { type: 'string', default: '200000' },
    inflight: { type: 'string', default: '1000' },
    latency: { type: 'string', default: '1500' },
    reps: { type: 'string', default: '3' },
    // Longest any one grants measurement runs, s: slow paths stop early instead of running for minutes.
    seconds: { type: 'string', default: '4' },
    // For profiling one part: `--only heap|grants|inflight` (nothing is written).
    only: { type: 'string', default: '' },
  },
});
const AGENTS = Number(args.agents);
const GRANTS = Number(args.grants);
const IN_FLIGHT = Number(args.inflight);
const LATENCY_MS = Number(args.latency);
const REPS = Number(args.reps);
const BUDGET_MS = Number(args.seconds) * 1000;
/** Contenders stop asking for tokens once this passes (set right before each grants measurement). */
let deadline = Number.POSITIVE_INFINITY;
const TOKENS = 3; // seed 000's semaphore
const MODEL = 'gpt-4o-mini';
const KEY = 'sk-bench-scale-0001';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc (npm run bench:scale does)');

function heapAfterGc(): number {
  for (let i = 0; i < 3; i++) gc!();
  return process.memoryUsage().heapUsed;
}

/** An engine that answers at once from memory (never used by the idle agents; used for ask() contention). */
function instantEngine(config: ParsedEndpointConfig): Engine {
  const endpoint = describeEndpoint(config);
  const result: EngineResult = Object.freeze({
    text: 'ok',
    toolCalls: [],
    stopReason: 'end_turn',
    usage: { inputTokens: 20, outputTokens: 5, source: 'reported' as const },
    endpoint,
    model: MODEL,
    rateLimit: {},
    latencyMs: 0,
  });
  return { endpoint, call: async () => result };
}

function runtimeConfig(limit: number, baseURL = 'http://127.0.0.1:9/v1'): RuntimeConfigInput {
  return {
    endpoints: [{ id: 'primary', provider: 'openai', model: MODEL, apiKey: KEY, baseURL }],
    chains: { main: ['primary'] },
    concurrency: { limit, leaseMs: 600_000 },
    agentDefaults: { historyTurns: 0, maxTokens: 16, maxWaitMs: 600_000 },
  };
}

// ── 1. heap per idle actor ───────────────────────────────────────────────────────────────────────

async function heapPerIdleAgent(): Promise<{
  viaSupervisor: number;
  afterOneTurn: number;
  bareActor: number;
  spawnMs: number;
  stopMs: number;
}> {
  // The bare actor first (a clean heap): what the agent machine itself costs, without the handle and the supervisor's bookkeeping.
  const settings = {
    tier: 'ops',
    chain: 'main',
    maxWaitMs: 10_000,
    maxAttempts: 6,
    maxTokens: 512,
    historyTurns: 6,
    toolResultsKept: 20,
    probeIntervalMs: 5_000,
    tools: [],
  };
  const b0 = heapAfterGc();
  const actors = [];
  for (let i = 0; i < AGENTS; i++) {
    actors.push(
      createActor(agentMachine, {
        input: { settings: { ...settings, name: `agent-${i}` }, memory: emptyMemory({ desk: 'APAC' }) },
      }).start(),
    );
  }
  const b1 = heapAfterGc();
  for (const a of actors) a.stop();
  actors.length = 0;

  const supervisor = createSupervisor(runtimeConfig(TOKENS), { createEngine: instantEngine });
  const before = heapAfterGc();
  const t0 = performance.now();
  for (let i = 0; i < AGENTS; i++)
    supervisor.spawnAgent({ name: `agent-${i}`, chain: 'main', memory: { desk: 'APAC' } });
  const spawnMs = performance.now() - t0;
  const after = heapAfterGc();
  if (supervisor.agents().length !== AGENTS) throw new Error('not every agent was spawned');
  const viaSupervisor = (after - before) / AGENTS;
  // The same agents idle again after one turn each: their memory holds one utterance and the last turn.
  for (const h of supervisor.agents()) await h.ask('ping', { turnId: `${h.name}-0` });
  const afterOneTurn = (heapAfterGc() - before) / AGENTS;
  const s0 = performance.now();
  await supervisor.stop();
  const stopMs = performance.now() - s0;
  return { viaSupervisor, afterOneTurn, bareActor: (b1 - b0) / AGENTS, spawnMs, stopMs };
}

// ── 2. grants per second ────────────────────────────────────────────────────────────────────────

/**
 * The token scheduler itself (the grant path every ask takes): real endpoint registry with its health (breaker,
 * buckets), real retry budget, real timer heap. `contenders` loops each acquire a token, release it with a
 * successful outcome and ask again, so `contenders - TOKENS` requests wait at every moment. Returns grants/s.
 */
async function grantsDirect(
  contenders: number,
  totalGrants: number,
  tierAgingMs?: number,
): Promise<{ grantsPerSec: number; grants: number }> {
  const config = defineConfig(runtimeConfig(TOKENS));
  const timers = new TimerHeap(systemClock);
  const endpoints = new EndpointRegistry(config.endpoints, config.chains, {
    timers,
    createEngine: instantEngine,
    settings: {
      breaker: config.breaker,
      baseBackoffMs: config.retry.baseBackoffMs,
      maxBackoffMs: config.retry.maxBackoffMs,
      creditCooldownMs: config.creditCooldownMs,
      adaptive: false,
      defaultConcurrency: TOKENS,
    },
  });
  const endpoint = describeEndpoint(config.endpoints[0]!);
  const result: EngineResult = {
    text: 'ok',
    toolCalls: [],
    stopReason: 'end_turn',
    usage: { inputTokens: 20, outputTokens: 5, source: 'reported' },
    endpoint,
    model: MODEL,
    rateLimit: {},
    latencyMs: 0,
  };
  let grants = 0;
  const scheduler = new MemoryTokenScheduler({
    clock: systemClock,
    timers,
    endpoints,
    limit: TOKENS,
    tiers: ['analysis', 'ops'],
    ...(tierAgingMs !== undefined ? { tierAgingMs } : {}),
    leaseMs: 600_000,
    reclaimGraceMs: 5_000,
    budget: new RetryBudget(),
  });
  const quota = Math.ceil(totalGrants / contenders);
  const t0 = performance.now();
  deadline = t0 + BUDGET_MS;
  const loops = Array.from({ length: contenders }, async (_, i) => {
    const request = {
      holder: `c-${i}`,
      tier: i % 2 === 0 ? 'analysis' : 'ops',
      chain: 'main',
      estimatedTokens: 25,
      maxWaitMs: 600_000,
      retry: false,
      attempt: 0,
    };
    for (let k = 0; k < quota && performance.now() < deadline; k++) {
      const d = await scheduler.acquire(request);
      if (d.kind !== 'granted') throw new Error(`contender ${i} was not granted: ${d.kind}`);
      grants++;
      scheduler.release(d.grant.leaseId, { kind: 'success', result });
    }
  });
  await Promise.all(loops);
  const ms = performance.now() - t0;
  if (grants < contenders) throw new Error(`expected at least ${contenders} grants, saw ${grants}`);
  scheduler.close();
  timers.close();
  return { grantsPerSec: (grants / ms) * 1000, grants };
}

/** The same contention through `agent.ask()`: real agent actors, in-memory engine, one grant per turn. */
async function grantsViaAsk(
  agents: number,
  turns: number,
): Promise<{ grantsPerSec: number; grants: number }> {
  let grants = 0;
  const supervisor = createSupervisor(runtimeConfig(TOKENS), {
    createEngine: instantEngine,
    onReport: (r) => {
      if (r.type === 'token.granted') grants++;
    },
  });
  const handles = Array.from({ length: agents }, (_, i) =>
    supervisor.spawnAgent({ name: `agent-${i}`, chain: 'main' }),
  );
  const perAgent = Math.ceil(turns / agents);
  const t0 = performance.now();
  deadline = t0 + BUDGET_MS;
  await Promise.all(
    handles.map(async (h) => {
      for (let k = 0; k < perAgent && performance.now() < deadline; k++)
        await h.ask('ping', { turnId: `${h.name}-${k}` });
    }),
  );
  const ms = performance.now() - t0;
  await supervisor.stop();
  return { grantsPerSec: (grants / ms) * 1000, grants };
}

// ── 3. 1,000 calls in flight ──────────────────────────────────────────────────────────────────────

/** Sums event-loop stalls longer than 20 ms (a 1 ms interval that fired late), in wall time. */
function stallMeter(): { stop(): { ms: number; count: number } } {
  let last = performance.now();
  let ms = 0;
  let count = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    const late = now - last - 1;
    if (late > 20) {
      ms += late;
      count++;
    }
    last = now;
  }, 1);
  return {
    stop() {
      clearInterval(timer);
      return { ms, count };
    },
  };
}

interface FlightSample {
  lagP99Ms: number;
  lagMaxMs: number;
  /** Wall time the loop spent in stalls over 20 ms, and how many. */
  stalledMs: number;
  stalls: number;
  maxInFlight: number;
  wallMs: number;
  failed: number;
}

/** `REPS` bursts each way, alternating which goes first; the median burst's figures are reported. */
async function inFlight(): Promise<{
  breakwater: FlightSample;
  bare: FlightSample;
  samples: { breakwater: FlightSample[]; bare: FlightSample[] };
}> {
  const emu = await startEmulatorProcess({
    seed: 8,
    latency: { minMs: LATENCY_MS, maxMs: LATENCY_MS },
    answerTokens: 40,
    defaultQuotas: { rpm: 1_000_000_000, tpm: 1_000_000_000_000 },
  });
  const prompt = 'Summarize the overnight moves on the APAC desk in three bullet points.';
  const measure = async (run: () => Promise<number>): Promise<FlightSample> => {
    await emu.reset();
    gc!();
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    // p99 of the histogram counts samples, and an idle loop takes ~1 sample per ms while a stall takes one:
    // a 3 s freeze in a 7 s burst still leaves p99 at a few ms. So the stalls are also summed in wall time.
    const stalls = stallMeter();
    const t0 = performance.now();
    const failed = await run();
    const wallMs = performance.now() - t0;
    h.disable();
    const stalled = stalls.stop();
    const stats = await emu.stats();
    return {
      lagP99Ms: round(h.percentile(99) / 1e6),
      lagMaxMs: round(h.max / 1e6),
      stalledMs: round(stalled.ms, 0),
      stalls: stalled.count,
      maxInFlight: stats.maxInFlight,
      wallMs: round(wallMs, 0),
      failed,
    };
  };
  const viaBreakwater = async (): Promise<FlightSample> => {
    const supervisor = createSupervisor(runtimeConfig(IN_FLIGHT, emu.baseURL('openai')));
    const handles = Array.from({ length: IN_FLIGHT }, (_, i) =>
      supervisor.spawnAgent({ name: `agent-${i}`, chain: 'main' }),
    );
    const sample = await measure(async () => {
      const turns = await Promise.all(handles.map((h) => h.ask(prompt, { turnId: `${h.name}-0` })));
      return turns.filter((t) => t.outcome !== 'answered').length;
    });
    await supervisor.stop();
    return sample;
  };
  const sdk = new OpenAI({ apiKey: KEY, baseURL: emu.baseURL('openai'), maxRetries: 0 });
  const viaSdk = () =>
    measure(async () => {
      const results = await Promise.allSettled(
        Array.from({ length: IN_FLIGHT }, () =>
          sdk.chat.completions.create({
            model: MODEL,
            messages: [{ role: 'user', content: prompt }],
            max_completion_tokens: 16,
          }),
        ),
      );
      return results.filter((r) => r.status === 'rejected').length;
    });
  const samples = { breakwater: [] as FlightSample[], bare: [] as FlightSample[] };
  try {
    for (let r = 0; r < REPS; r++) {
      if (r % 2 === 0) {
        samples.breakwater.push(await viaBreakwater());
        samples.bare.push(await viaSdk());
      } else {
        samples.bare.push(await viaSdk());
        samples.breakwater.push(await viaBreakwater());
      }
      process.stdout.write('.');
    }
    process.stdout.write('\n');
  } finally {
    await emu.close();
  }
  const median = (xs: FlightSample[]) =>
    [...xs].sort((a, b) => a.lagP99Ms - b.lagP99Ms)[Math.floor(xs.length / 2)]!;
  return { breakwater: median(samples.breakwater), bare: median(samples.bare), samples };
}

async function main(): Promise<void> {
  if (args.only) return profileOne(args.only);
  // Fresh heap first for the latency-sensitive part; the 10,000-agent heap part last.
  console.log(`in flight: ${IN_FLIGHT} calls, emulator latency ${LATENCY_MS} ms, ${REPS} bursts each way`);
  const flight = await inFlight();
  console.log(`grants: ${GRANTS} grants, ${TOKENS} tokens`);
  // Warm the JIT on a small run first, then the measured ones.
  await grantsDirect(100, 20_000);
  const direct = {
    c10: await grantsDirect(10, GRANTS),
    c1000: await grantsDirect(1_000, GRANTS),
    c10000: await grantsDirect(10_000, GRANTS),
    // With tier aging (`tierAgingMs`): every grant compares the tiers' heads instead of stopping at the first.
    c1000Aged: await grantsDirect(1_000, GRANTS, 1),
    c10000Aged: await grantsDirect(10_000, GRANTS, 1),
  };
  await grantsViaAsk(100, 2_000);
  const viaAsk = {
    c10: await grantsViaAsk(10, 20_000),
    c100: await grantsViaAsk(100, 20_000),
    c1000: await grantsViaAsk(1_000, 20_000),
  };
  console.log(`heap: ${AGENTS} idle agents`);
  const heap = await heapPerIdleAgent();

  const bytesPerIdleActor = Math.round(heap.viaSupervisor);
  const grantsPerSec = Math.round(
    Math.min(
      direct.c1000.grantsPerSec,
      direct.c10000.grantsPerSec,
      direct.c1000Aged.grantsPerSec,
      direct.c10000Aged.grantsPerSec,
    ),
  );
  const lagP99Ms = flight.breakwater.lagP99Ms;
  const spawnStopMs = Math.round(heap.spawnMs + heap.stopMs);
  const targets = { bytesPerIdleActor: 4_096, grantsPerSec: 50_000, spawnStopMs: 1_000, lagP99Ms: 20 };
  const met = {
    bytesPerIdleActor: bytesPerIdleActor <= targets.bytesPerIdleActor,
    grantsPerSec: grantsPerSec >= targets.grantsPerSec,
    spawnStopMs: spawnStopMs <= targets.spawnStopMs,
    lagP99Ms: lagP99Ms <= targets.lagP99Ms,
  };
  const mark = (ok: boolean) => (ok ? 'met' : 'MISSED');

  console.log();
  console.log(row('heap per idle agent (bytes)', 'spawned', 'after 1 turn', 'bare actor'));
  console.log(row('', bytesPerIdleActor, Math.round(heap.afterOneTurn), Math.round(heap.bareActor)));
  console.log(row(`spawning ${AGENTS} agents (ms)`, round(heap.spawnMs, 0)));
  console.log(row(`stopping ${AGENTS} agents (ms)`, round(heap.stopMs, 0)));
  console.log();
  console.log(row(`grants/s, ${TOKENS} tokens`, '10 waiting', '1000 waiting', '10000 waiting'));
  console.log(
    row(
      'token scheduler (direct)',
      Math.round(direct.c10.grantsPerSec),
      Math.round(direct.c1000.grantsPerSec),
      Math.round(direct.c10000.grantsPerSec),
    ),
  );
  console.log(row(`grants/s, ${TOKENS} tokens`, '10 agents', '100 agents', '1000 agents'));
  console.log(
    row(
      'agent.ask(), in-memory engine',
      Math.round(viaAsk.c10.grantsPerSec),
      Math.round(viaAsk.c100.grantsPerSec),
      Math.round(viaAsk.c1000.grantsPerSec),
    ),
  );
  console.log();
  console.log(row(`${IN_FLIGHT} calls in flight`, 'breakwater', 'bare SDK'));
  console.log(row('event-loop lag p99 (ms)', flight.breakwater.lagP99Ms, flight.bare.lagP99Ms));
  console.log(row('event-loop lag max (ms)', flight.breakwater.lagMaxMs, flight.bare.lagMaxMs));
  console.log(row('time in stalls > 20 ms (ms)', flight.breakwater.stalledMs, flight.bare.stalledMs));
  console.log(row('stalls > 20 ms', flight.breakwater.stalls, flight.bare.stalls));
  console.log(row('max in flight at the emulator', flight.breakwater.maxInFlight, flight.bare.maxInFlight));
  console.log(row('wall time (ms)', flight.breakwater.wallMs, flight.bare.wallMs));
  console.log(row('failed calls', flight.breakwater.failed, flight.bare.failed));
  console.log();
  console.log(
    `heap per idle agent ${bytesPerIdleActor} B (target ≤ ${targets.bytesPerIdleActor}: ${mark(met.bytesPerIdleActor)}), ` +
      `spawn + stop of ${AGENTS} agents ${spawnStopMs} ms (target ≤ ${targets.spawnStopMs}: ${mark(met.spawnStopMs)}), ` +
      `grants ${grantsPerSec}/s with 1000 and 10000 waiting on ${TOKENS} tokens (the lowest, strict tiers and tier aging; target ≥ ${targets.grantsPerSec}: ${mark(met.grantsPerSec)}), ` +
      `lag p99 ${lagP99Ms} ms with ${IN_FLIGHT} in flight (target ≤ ${targets.lagP99Ms}: ${mark(met.lagP99Ms)})`,
  );

  const path = await writeResult('scale', {
    bytesPerIdleActor,
    grantsPerSec,
    spawnStopMs,
    lagP99Ms,
    // The p99 hides freezes (see stalledMs): the longest one and the wall time spent in them, beside it.
    lagMaxMs: flight.breakwater.lagMaxMs,
    stalledMs: flight.breakwater.stalledMs,
    targets,
    met,
    heap: {
      agents: AGENTS,
      bytesPerIdleActor,
      bytesPerIdleAgentAfterOneTurn: Math.round(heap.afterOneTurn),
      bytesPerBareAgentActor: Math.round(heap.bareActor),
      spawnMs: round(heap.spawnMs, 0),
      stopMs: round(heap.stopMs, 0),
      spawnStopMs,
      measuredAs:
        'heapUsed after global.gc(), before and after spawning (and after one turn each), ÷ agents; spawn and stop timed around spawnAgent ×N and supervisor.stop()',
    },
    grants: {
      tokens: TOKENS,
      measuredAs:
        'grantsPerSec: the token scheduler directly (real endpoint registry with health: breaker, buckets; retry budget; timer heap), N contenders each acquiring, releasing with a success and asking again, so N - 3 wait at every moment; the lowest of N = 1000 and N = 10000, strict tiers and with tierAgingMs (…Aged). viaAsk: agent.ask() with real agent actors and an in-memory engine',
      direct: Object.fromEntries(
        Object.entries(direct).map(([k, v]) => [
          k,
          { grantsPerSec: Math.round(v.grantsPerSec), grants: v.grants },
        ]),
      ),
      viaAsk: Object.fromEntries(
        Object.entries(viaAsk).map(([k, v]) => [
          k,
          { grantsPerSec: Math.round(v.grantsPerSec), grants: v.grants },
        ]),
      ),
    },
    inFlight: {
      calls: IN_FLIGHT,
      emulatorLatencyMs: LATENCY_MS,
      measuredAs:
        'monitorEventLoopDelay (1 ms resolution) over the whole burst; emulator in its own process; breakwater = 1000 agents, 1000 tokens, one ask each; the median of the bursts (by lag p99) is reported, every burst in samples',
      breakwater: flight.breakwater,
      bare: flight.bare,
      samples: flight.samples,
    },
  });
  console.log(`wrote ${path}`);
}

/** Runs one part alone, for `node --cpu-prof`. */
async function profileOne(part: string): Promise<void> {
  if (part === 'heap') console.log(await heapPerIdleAgent());
  else if (part === 'grants') {
    await grantsDirect(100, 20_000);
    console.log('direct, 1000 contenders', await grantsDirect(1_000, GRANTS));
    console.log('direct, 10000 contenders', await grantsDirect(10_000, GRANTS));
    console.log('direct, 1000 contenders, tier aging', await grantsDirect(1_000, GRANTS, 1));
    console.log('direct, 10000 contenders, tier aging', await grantsDirect(10_000, GRANTS, 1));
    console.log('ask, 1000 agents', await grantsViaAsk(1_000, 20_000));
  } else if (part === 'grants10') {
    await grantsDirect(10, 20_000);
    console.log('direct, 10 contenders', await grantsDirect(10, GRANTS));
  } else if (part === 'inflight') console.log(await inFlight());
  else throw new Error(`--only ${part}: use heap, grants, grants10 or inflight`);
  console.log('partial run (profiling): no result written');
}

await main();
