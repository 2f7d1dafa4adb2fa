import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

let emulator: Emulator;

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 11 } });
});
afterAll(async () => {
  await emulator.close();
});

// Before the agent machine handled its engine call's error event, a call memo that threw took the agent actor
// to `error`, the supervisor with it (an unhandled child error), and then the whole process (XState rethrows).
describe('an engine call that throws instead of resolving with an outcome', () => {
  it('ends that turn failed, frees its token, and the runtime keeps answering', async () => {
    let storeDown = true;
    const supervisor = createSupervisor(
      {
        endpoints: [emulatorEndpoint(emulator, 'primary', 'openai', 'gpt-4o-mini')],
        chains: { main: ['primary'] },
      },
      {
        memo: {
          recall: async () => {
            if (storeDown)
              throw new Error('connection to the run store lost (sk-ant-api03-STOREKEY00000000)');
            return undefined;
          },
          remember: async () => {},
        },
      },
    );
    try {
      const agent = supervisor.spawnAgent({ name: 'analyst', chain: 'main' });
      const other = supervisor.spawnAgent({ name: 'ops', chain: 'main' });
      const failed = await agent.ask('status?');
      expect(failed.outcome).toBe('failed');
      expect(failed.error).toMatch(/^internal error in agent analyst: connection to the run store lost/);
      expect(failed.error).not.toContain('STOREKEY00000000');
      expect(supervisor.tokens().held).toBe(0);
      expect(supervisor.actor.getSnapshot().status).toBe('active');
      // The endpoint is not blamed for our bug.
      expect(supervisor.health().find((h) => h.id === 'primary')).toMatchObject({
        cooldownUntil: 0,
        breaker: 'closed',
        inFlight: 0,
      });

      storeDown = false;
      const [again, fine] = await Promise.all([agent.ask('status, again?'), other.ask('queue depth?')]);
      expect(again.outcome).toBe('answered');
      expect(fine.outcome).toBe('answered');
    } finally {
      await supervisor.stop();
    }
  });
});
