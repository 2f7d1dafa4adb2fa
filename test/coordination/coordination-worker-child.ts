/*
 * One worker process of the multi-process coordination tests: a supervisor on a shared quota (PostgreSQL or
 * Redis), `agents` agents asking the emulator's "sonnet" endpoint back to back until the parent writes "stop"
 * on stdin. Writes one JSON line per token event on stdout; the coordination error line goes to stderr.
 */
import pino from 'pino';
import { createScaledClock } from '../../src/clock/scaled-clock.ts';
import type { CoordinationOptions } from '../../src/coordination/coordination-options.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';

interface WorkerSpec {
  readonly baseURL: string;
  readonly coordination: CoordinationOptions;
  readonly agents: number;
  readonly limit: number;
  readonly maxWaitMs: number;
  /** Sonnet's RPM/TPM limits (shared by the pool). Default: none. */
  readonly limits?: { rpm?: number; tpm?: number };
  /** Runs the supervisor on a scaled clock (simulated ms per real ms). Default: the system clock. */
  readonly timeScale?: number;
  /** The breaker's settings. Default: the runtime's. */
  readonly breaker?: { openMs?: number; maxOpenMs?: number };
  /** On "stop", asks still waiting after this many real ms are cancelled. Default 5 000. */
  readonly drainMs?: number;
}

const spec = JSON.parse(process.argv[2]!) as WorkerSpec;
const say = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`);
const supervisor = createSupervisor(
  {
    endpoints: [
      {
        id: 'sonnet',
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        apiKey: 'sk-test-sonnet-000000000000',
        baseURL: spec.baseURL,
        headersTimeoutMs: 20_000 * (spec.timeScale ?? 1),
        idleTimeoutMs: 20_000 * (spec.timeScale ?? 1),
        ...(spec.limits ? { limits: spec.limits } : {}),
      },
    ],
    chains: { premium: ['sonnet'] },
    concurrency: { limit: spec.limit },
    ...(spec.breaker ? { breaker: spec.breaker } : {}),
    agentDefaults: { maxWaitMs: spec.maxWaitMs, maxTokens: 64 },
  },
  {
    coordination: spec.coordination,
    ...(spec.timeScale ? { clock: createScaledClock({ scale: spec.timeScale }) } : {}),
    logger: pino({ level: 'error' }, pino.destination(2)),
    onReport: (r) => {
      if (r.type === 'token.granted' || r.type === 'token.released') say({ type: r.type });
    },
    // Each call as it started (this process's clock: Date.now), for the parent to check against when this process
    // learned of a cooldown.
    onEvent: (e) => {
      if (e.type === 'call.attempt')
        say({
          type: 'call',
          startedAt: e.data.startedAt,
          latencyMs: e.data.latencyMs,
          status: e.data.status,
          probe: e.data.probe === true,
        });
    },
  },
);

// When this process sees the endpoint cooling (its own 429 or one absorbed from another process): a line with the
// instant it was seen (at or after the cooldown reached it) and until when.
let cooling = false;
const watch = setInterval(() => {
  const until = supervisor.health().find((h) => h.id === 'sonnet')?.cooldownUntil ?? 0;
  const now = Date.now();
  if (until > now && !cooling) say({ type: 'cooled', at: now, until });
  cooling = until > now;
}, 2);
watch.unref();

let stopping = false;
const loops = Array.from({ length: spec.agents }, async (_, i) => {
  const agent = supervisor.spawnAgent({ name: `agent-${i}`, chain: 'premium', tier: 'analysis' });
  let n = 0;
  while (!stopping) {
    try {
      const turn = await agent.ask(`question ${i}-${n++}`);
      say({ type: 'turn', outcome: turn.outcome });
    } catch {
      return;
    }
  }
});
say({ type: 'ready' });

process.stdin.setEncoding('utf8').on('data', (s: string) => {
  // Global tokens held right now (the coordinated scheduler's view).
  if (s.includes('held')) say({ type: 'held', n: supervisor.tokens().held });
  if (!s.includes('stop') || stopping) return;
  stopping = true;
  void supervisor.stop({ signal: AbortSignal.timeout(spec.drainMs ?? 5_000) }).then(async () => {
    await Promise.allSettled(loops);
    say({ type: 'stopped' });
    process.exit(0);
  });
});
