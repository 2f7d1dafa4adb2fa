import { afterEach, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { EmulatorProfile } from '../../src/emulator/emulator-types.ts';
import { anthropicClient } from './sdk-clients.ts';

let emus: Emulator[] = [];
afterEach(async () => {
  await Promise.all(emus.map((e) => e.close()));
  emus = [];
});
const start = async (profile: EmulatorProfile, seed?: number) => {
  const clock = createManualClock(0);
  const emu = await startEmulator({ clock, profile, ...(seed !== undefined ? { seed } : {}) });
  emus.push(emu);
  return { emu, clock };
};

/** Status of one Anthropic call (200 or the error status). */
async function status(
  emu: Emulator,
  key = 'sk-ant-any-key-0001',
  model = 'claude-sonnet-4-6',
): Promise<number> {
  const res = await anthropicClient(emu, key)
    .messages.create({ model, max_tokens: 8, messages: [{ role: 'user', content: 'x' }] })
    .withResponse()
    .then(
      (r) => r.response.status,
      (e: { status?: number }) => e.status ?? -1,
    );
  return res;
}

describe('fault rules: match, count, window, probability', () => {
  it('count: fires at most N times; reset() re-arms it', async () => {
    const { emu } = await start({ faults: [{ kind: 'overloaded', count: 2 }] });
    expect([await status(emu), await status(emu), await status(emu)]).toEqual([529, 529, 200]);
    emu.reset();
    expect(await status(emu)).toBe(529);
  });

  it('window: active only inside [fromMs, toMs) of emulated time (timeScale applies)', async () => {
    const { emu, clock } = await start({
      timeScale: 10,
      faults: [{ kind: 'gateway_timeout', window: { fromMs: 10_000, toMs: 20_000 } }],
    });
    expect(await status(emu)).toBe(200);
    clock.advance(1_000); // 10 000 emulated ms
    expect(await status(emu)).toBe(504);
    clock.advance(999);
    expect(await status(emu)).toBe(504);
    clock.advance(1);
    expect(await status(emu)).toBe(200);
  });

  it('match: by key alias, plaintext key, and model', async () => {
    const { emu } = await start({
      acceptAnyKey: true,
      keys: [
        { alias: 'primary', key: 'sk-primary-0001' },
        { alias: 'backup', key: 'sk-backup-0002' },
      ],
      faults: [
        { kind: 'rate_limit', match: { key: 'primary', model: 'claude-opus-4-1' } },
        { kind: 'overloaded', match: { key: 'sk-backup-0002' } },
      ],
    });
    expect(await status(emu, 'sk-primary-0001', 'claude-opus-4-1')).toBe(429);
    expect(await status(emu, 'sk-primary-0001', 'claude-sonnet-4-6')).toBe(200);
    expect(await status(emu, 'sk-backup-0002', 'claude-opus-4-1')).toBe(529);
    expect(await status(emu, 'sk-someone-else-0003', 'claude-opus-4-1')).toBe(200);
    expect(emu.stats().calls.map((c) => c.fault ?? null)).toEqual(['rate_limit', null, 'overloaded', null]);
  });

  it('probability: drawn from the seeded RNG — same seed, same pattern; another seed, another pattern', async () => {
    const profile: EmulatorProfile = { faults: [{ kind: 'overloaded', probability: 0.5 }] };
    const pattern = async (seed: number) => {
      const { emu } = await start(profile, seed);
      const out: number[] = [];
      for (let i = 0; i < 24; i++) out.push(await status(emu));
      return out;
    };
    const a = await pattern(11);
    const b = await pattern(11);
    const c = await pattern(12);
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    const fired = a.filter((s) => s === 529).length;
    expect(fired).toBeGreaterThan(4);
    expect(fired).toBeLessThan(20);
  });

  it('unknown keys get the provider bad-key error when keys are listed (acceptAnyKey defaults to false)', async () => {
    const { emu } = await start({ keys: [{ alias: 'primary', key: 'sk-primary-0001' }] });
    expect(await status(emu, 'sk-primary-0001')).toBe(200);
    expect(await status(emu, 'sk-intruder-0001')).toBe(401);
  });
});
