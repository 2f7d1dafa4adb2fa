import type { ManualClock } from '../../src/clock/clock.ts';
import type { Emulator } from '../../src/emulator/emulator-server.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import type { Turn } from '../../src/core/turn.ts';
import { driveUntil, emulatorEndpoint } from '../support/runtime-harness.ts';

/*
 * One short, real scenario shared by the visualizer's tests: a supervisor with two agents against the
 * provider emulator (real SDKs over real HTTP), on a manual clock. `sonnet` answers 429 until the fault is
 * removed: its breaker opens (one 429 is enough here) and `analyst` cools; then the breaker probes itself
 * closed and `analyst` answers. `ops` on `flash` is never affected.
 */

/** The key of the failing endpoint: the page and every API must never show it. */
export const SONNET_KEY = 'sk-ant-api03-vizsecretkey0000000000000000';

export interface BreakerScenario {
  readonly supervisor: Supervisor;
  /** Every runtime event, in emission order. */
  readonly events: RuntimeEvent[];
  /** Asks both agents; resolves once `analyst` is cooling behind an OPEN breaker. */
  storm(): Promise<void>;
  /** Removes the fault and drives simulated time until `analyst` answered and the breaker is CLOSED. */
  recover(options?: { between?: () => Promise<void> }): Promise<{ analyst: Turn; ops: Turn }>;
}

/** Builds the runtime of the scenario (not started until `storm`). */
export function breakerScenario(
  emulator: Emulator,
  clock: ManualClock,
  options: { onEvent?: (e: RuntimeEvent) => void } = {},
): BreakerScenario {
  const events: RuntimeEvent[] = [];
  const supervisor = createSupervisor(
    {
      endpoints: [
        emulatorEndpoint(emulator, 'sonnet', 'anthropic', 'claude-sonnet-4-6', SONNET_KEY),
        emulatorEndpoint(emulator, 'flash', 'gemini', 'gemini-2.5-flash'),
      ],
      chains: { premium: ['sonnet'], light: ['flash'] },
      concurrency: { limit: 2 },
      breaker: { consecutiveToOpen: 1, openMs: 30_000, probesToClose: 2 },
      agentDefaults: { maxWaitMs: 120_000, probeIntervalMs: 5_000 },
    },
    {
      clock,
      random: () => 0.5,
      onEvent: (e) => {
        events.push(e);
        options.onEvent?.(e);
      },
    },
  );
  const analyst = supervisor.spawnAgent({ name: 'analyst', chain: 'premium', tier: 'analysis' });
  const ops = supervisor.spawnAgent({ name: 'ops', chain: 'light', tier: 'ops' });
  let fault: string | undefined;
  let analystTurn: Turn | undefined;
  let opsTurn: Turn | undefined;
  const sonnet = () => supervisor.health().find((h) => h.id === 'sonnet')!;

  return {
    supervisor,
    events,
    async storm() {
      fault = emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, retryAfterMs: 30_000 });
      void analyst.ask('What moved rates overnight?').then((t) => {
        analystTurn = t;
      });
      void ops.ask('Flush the outbox summary.').then((t) => {
        opsTurn = t;
      });
      // Simulated time moves in small steps (an emulator with latency answers only when it does), far short of the
      // 30 s the 429 asks for.
      await driveUntil(
        clock,
        () => analyst.state() === 'cooling' && sonnet().breaker === 'open' && opsTurn !== undefined,
        { stepMs: 100, maxSimulatedMs: 10_000 },
      );
    },
    async recover(options = {}) {
      if (fault) emulator.removeFault(fault);
      await driveUntil(
        clock,
        () => analystTurn !== undefined && analyst.state() === 'idle' && sonnet().breaker === 'closed',
        { stepMs: 1_000, maxSimulatedMs: 120_000 },
      );
      await options.between?.();
      return { analyst: analystTurn!, ops: opsTurn! };
    },
  };
}
