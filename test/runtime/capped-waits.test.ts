import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { okReply, RESET_HEADER_FORMS, type ResetHeaderForm } from '../support/reset-header-forms.ts';
import { driveUntil } from '../support/runtime-harness.ts';
import { startWireFixtureServer, type WireFixtureServer } from '../support/wire-fixture-server.ts';

/*
 * A cap on a provider's wait is never silent, whoever made the call: a 200 whose rate-limit reset is a year away
 * (an absurd header) is read as the 15 min cap, the call's event keeps what was asked (`resetCappedFromMs`), and
 * one warning says so, for an agent's call and for a HALF-OPEN probe alike.
 */

const YEAR_MS = 365 * 86_400_000;
const KEY = 'sk-ant-capped-waits-test-00000001';
const form = RESET_HEADER_FORMS.find((f) => f.name === 'anthropic-ratelimit-reset') as ResetHeaderForm;
/** A good answer whose request window resets a year from now (remaining 0: the pacer must wait for it). */
const absurdOk = () => ({ ...okReply('anthropic'), headers: form.headers(Date.now(), YEAR_MS) });

let server: WireFixtureServer;
beforeAll(async () => {
  server = await startWireFixtureServer();
});
afterAll(() => server.close());

function start(route: string) {
  const clock = createManualClock(Date.parse('2026-03-02T09:00:00Z'));
  const events: RuntimeEvent[] = [];
  const logs: { level: number; msg: string; tier?: string; agent?: string; askedMs?: number }[] = [];
  const logger = createLogger({
    level: 'warn',
    destination: { write: (l: string) => logs.push(JSON.parse(l)) },
  });
  const supervisor = createSupervisor(
    {
      endpoints: [
        {
          id: 'sonnet',
          provider: 'anthropic',
          model: 'claude-sonnet-4-6',
          apiKey: KEY,
          baseURL: server.url(route),
        },
      ],
      chains: { main: ['sonnet'] },
      agentDefaults: { maxWaitMs: 2_000 },
      breaker: { consecutiveToOpen: 3, openMs: 30_000, probesToClose: 1 },
    },
    { clock, logger, random: () => 0.5, onEvent: (e) => events.push(e) },
  );
  const warnings = () => logs.filter((l) => /maxRetryAfterMs/.test(l.msg));
  return { clock, events, supervisor, warnings };
}

const attempts = (events: RuntimeEvent[]) =>
  events.filter((e): e is Extract<RuntimeEvent, { type: 'call.attempt' }> => e.type === 'call.attempt');

describe('a 200 carrying a reset a year away', () => {
  it("an agent's call: resetCappedFromMs on its event, and exactly one warning", async () => {
    server.route('agent', absurdOk);
    const { events, supervisor, warnings } = start('agent');
    try {
      const turn = await supervisor.spawnAgent({ name: 'Kai', chain: 'main' }).ask('Status?');
      expect(turn.outcome).toBe('answered');
      const [call] = attempts(events);
      expect(call?.data.outcome).toBe('ok');
      // Asked: a year, from the wall instant the header names (± a second of transit).
      expect(Math.abs((call?.data.resetCappedFromMs ?? 0) - YEAR_MS)).toBeLessThan(2_000);
      expect(warnings()).toHaveLength(1);
      expect(warnings()[0]).toMatchObject({ level: 40, agent: 'Kai' });
    } finally {
      await supervisor.stop();
    }
  });

  it('a HALF-OPEN probe: resetCappedFromMs on the probe event, and exactly one warning naming the probe', async () => {
    // Three dropped connections open the breaker; the probe after openMs gets the absurd 200.
    let n = 0;
    server.route('probe', () => (++n <= 3 ? { action: 'destroy' } : absurdOk()));
    const { clock, events, supervisor, warnings } = start('probe');
    try {
      const kai = supervisor.spawnAgent({ name: 'Kai', chain: 'main' });
      // The asks' backoffs run on the manual clock: driven until the breaker opens.
      let settled = 0;
      const asks = [0, 1, 2].map((i) => kai.ask(`job ${i}`).finally(() => settled++));
      await driveUntil(clock, () => supervisor.health()[0]?.breaker === 'open', {
        stepMs: 100,
        maxSimulatedMs: 30_000,
      });
      expect(supervisor.health()[0]?.breaker).toBe('open');
      expect(warnings()).toHaveLength(0);
      await driveUntil(clock, () => attempts(events).some((e) => e.data.probe), {
        stepMs: 1_000,
        maxSimulatedMs: 90_000,
      });
      const probe = attempts(events).find((e) => e.data.probe);
      expect(probe?.data.outcome).toBe('ok');
      expect(Math.abs((probe?.data.resetCappedFromMs ?? 0) - YEAR_MS)).toBeLessThan(2_000);
      expect(warnings()).toHaveLength(1);
      expect(warnings()[0]).toMatchObject({ level: 40, tier: 'probe', endpoint: 'sonnet' });
      // Every ask settled once (degraded: the only endpoint was OPEN while they waited).
      await driveUntil(clock, () => settled === 3, { stepMs: 100, maxSimulatedMs: 30_000 });
      expect((await Promise.all(asks)).map((t) => t.outcome)).toHaveLength(3);
    } finally {
      await supervisor.stop();
    }
  });
});
