import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { driveUntil, emulatorEndpoint, settle } from '../support/runtime-harness.ts';

/*
 * An endpoint that answers a probe with HTTP 499 (Google's CANCELLED, some gateways) yields a fault of kind
 * 'cancelled' although nothing on our side cancelled the probe: that is the endpoint's answer, a failed probe. Were
 * it taken for an abandoned probe (still HALF-OPEN, wanting another at once), the endpoint the breaker protects would
 * be probed back to back, with no cooldown and no simulated time passing.
 */
let emulator: Emulator;
let server: Server;
let mode: 'reset' | '499' = 'reset';
let hits = 0;

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 11 }, clock: createManualClock(0) });
  server = createServer((req, res) => {
    hits++;
    req.resume();
    if (mode === 'reset') {
      req.socket.destroy();
      return;
    }
    res.writeHead(499, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: 'client closed request', type: 'cancelled', code: 499 } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await emulator.close();
});

describe('a probe answered 499 by the endpoint', () => {
  it('is a failed probe (the endpoint answered): the breaker reopens, no second probe without time passing', async () => {
    const clock = createManualClock(Date.parse('2026-08-17T07:00:00+09:00'));
    const port = (server.address() as AddressInfo).port;
    const supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'local-vllm', 'vllm', 'llama-3-70b', undefined, {
            baseURL: `http://127.0.0.1:${port}/v1`,
          }),
          emulatorEndpoint(emulator, 'haiku', 'anthropic', 'claude-haiku-4-5'),
        ],
        chains: { light: ['local-vllm', 'haiku'] },
        breaker: { openMs: 30_000, consecutiveToOpen: 3 },
      },
      { clock, random: () => 0 },
    );
    try {
      const agent = supervisor.spawnAgent({ name: 'ops', chain: 'light', tier: 'ops' });
      for (let i = 0; i < 3; i++) await agent.ask(`job ${i}`);
      const vllm = () => supervisor.health().find((h) => h.id === 'local-vllm')!;
      expect(vllm().breaker).toBe('open');
      const before = hits;
      mode = '499';
      // HALF-OPEN after openMs: the first probe goes.
      await driveUntil(clock, () => hits > before, { stepMs: 1_000, maxSimulatedMs: 60_000 });
      const probedAt = clock.now();
      // No simulated time passes from here: only real I/O turns. A second probe now is the hot loop.
      await settle(() => hits > before + 1 || vllm().breaker === 'open', 2_000).catch(() => {});
      await settle(() => hits > before + 5, 500).catch(() => {});
      expect(clock.now()).toBe(probedAt);
      expect(hits - before).toBe(1);
      expect(vllm().breaker).toBe('open');
    } finally {
      await supervisor.stop();
    }
  });
});
