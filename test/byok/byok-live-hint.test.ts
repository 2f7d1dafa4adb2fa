import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createLiveView, type LiveStream } from '../../src/live/live-view.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { driveUntil, emulatorEndpoint } from '../support/runtime-harness.ts';

// The live view over a real supervisor: while agents are degraded because the platform's credit is
// gone, it says that `/byok` would help; once the user's key is in, the agents answer with it and the
// hint goes; when that key expires, the hint is back.

const HINT =
  'credit exhausted on primary (openai): type /byok openai KEY to let the agents go on with your own key';
const KEY = 'sk-proj-liveHintUser000000000000a1b2';
const TTL = 5 * 60_000;

let emulator: Emulator;
let clock: ManualClock;
let supervisor: Supervisor | undefined;

beforeAll(async () => {
  clock = createManualClock(Date.parse('2026-03-02T09:00:00+09:00'));
  emulator = await startEmulator({
    clock,
    profile: {
      seed: 2,
      acceptAnyKey: false,
      keys: [
        { alias: 'platform', key: 'sk-platform-live-000000000001', credit: 0 },
        { alias: 'user', key: KEY },
      ],
    },
  });
});
afterEach(async () => {
  await supervisor?.stop();
  supervisor = undefined;
});
afterAll(() => emulator?.close());

function stream(isTTY: boolean): LiveStream & { text: () => string } {
  const chunks: string[] = [];
  return { isTTY, columns: 160, rows: 60, write: (s: string) => chunks.push(s), text: () => chunks.join('') };
}

describe('the live view and /byok', () => {
  it('degraded for lack of credit: the hint shows (frame and plain log); with a key it goes; after expiry it is back', async () => {
    supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'primary', 'openai', 'gpt-4o', 'sk-platform-live-000000000001'),
        ],
        chains: { main: ['primary'] },
        agentDefaults: { maxWaitMs: 5_000, probeIntervalMs: 5_000 },
        byok: {
          idleTtlMs: TTL,
          templates: {
            openai: { provider: 'openai', model: 'gpt-4o-mini', baseURL: emulator.baseURL('openai') },
          },
        },
      },
      { clock },
    );
    const plainOut = stream(false);
    const plain = createLiveView({ source: supervisor, out: plainOut, clock });
    const tty = createLiveView({ source: supervisor, out: stream(true), clock, maxRedrawsPerSecond: 1 });
    const kai = supervisor.spawnAgent({ name: 'Kai', chain: 'main', tier: 'analysis' });

    const degraded = await kai.ask('U04: the shared key is out of credit');
    expect(degraded.outcome).toBe('degraded');
    expect(kai.state()).toBe('degraded');
    expect(tty.frame()).toContain(HINT);
    expect(
      plainOut
        .text()
        .split('\n')
        .filter((l) => l.endsWith(HINT)),
    ).toHaveLength(1);

    const receipt = await supervisor.byok.inject('default', 'openai', KEY);
    expect(tty.frame().some((l) => l.includes('/byok'))).toBe(false);
    expect(plainOut.text()).toContain(
      `your openai key sk-proj-…a1b2 is in use as endpoint ${receipt.endpointId}`,
    );
    await driveUntil(clock, () => kai.state() === 'idle', { stepMs: 1_000, maxSimulatedMs: 30_000 });
    const answered = await kai.ask('U04 again');
    expect(answered.endpointId).toBe(receipt.endpointId);
    expect(tty.frame().some((l) => l.includes('/byok'))).toBe(false);

    clock.advance(TTL + 1);
    expect(supervisor.byok.list()).toEqual([]);
    expect(plainOut.text()).toContain('your openai key sk-proj-…a1b2 was removed (idle)');
    expect((await kai.ask('after the key expired')).outcome).toBe('degraded');
    expect(tty.frame()).toContain(HINT);
    expect(plainOut.text()).not.toContain(KEY);
    plain.stop();
    tty.stop();
  });
});
