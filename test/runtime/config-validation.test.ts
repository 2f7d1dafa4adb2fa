import { describe, expect, it } from 'vitest';
import { DEFAULT_BREAKER_CONFIG, resolveBreakerConfig } from '../../src/core/breaker-config.ts';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { defineConfig } from '../../src/runtime/runtime-config.ts';

const base = {
  endpoints: [{ id: 'local', provider: 'openai-compatible', flavor: 'ollama', model: 'llama3.1' }],
  chains: { light: ['local'] },
} as const;

function refusal(input: unknown): string {
  try {
    defineConfig(input as never);
  } catch (e) {
    expect(isConfigError(e)).toBe(true);
    return (e as Error).message;
  }
  throw new Error('config was accepted');
}

describe('a bad config is refused at start with a message naming the field', () => {
  it('accepts a good one and fills defaults', () => {
    const c = defineConfig(base as never);
    expect(c.concurrency.limit).toBe(3);
    expect(c.breaker.failureRateThreshold).toBe(0.3);
    expect(c.breaker.openMs).toBe(30_000);
    expect(c.tiers).toEqual(['analysis', 'ops']);
  });
  it('the breaker: the config and the machine take the same defaults and the same bounds (one owner)', () => {
    const { consecutiveKinds: _kinds, ...defaults } = DEFAULT_BREAKER_CONFIG;
    expect(defineConfig(base as never).breaker).toEqual(defaults);
    // 0 and 1 are thresholds both take (1 turns the rate rule off); outside [0, 1] both refuse, naming the field.
    for (const rate of [0, 1]) {
      expect(
        defineConfig({ ...base, breaker: { failureRateThreshold: rate } } as never).breaker
          .failureRateThreshold,
      ).toBe(rate);
      expect(resolveBreakerConfig({ failureRateThreshold: rate }).failureRateThreshold).toBe(rate);
    }
    for (const rate of [-0.1, 1.5]) {
      expect(refusal({ ...base, breaker: { failureRateThreshold: rate } })).toMatch(
        /breaker\.failureRateThreshold/,
      );
      expect(() => resolveBreakerConfig({ failureRateThreshold: rate })).toThrow(/failureRateThreshold/);
    }
  });
  it('unknown provider', () => {
    expect(
      refusal({ ...base, endpoints: [{ id: 'x', provider: 'cohere', model: 'm', apiKey: 'k' }] }),
    ).toMatch(/endpoints\[0\]\.provider/);
  });
  it('chain naming a missing endpoint', () => {
    const msg = refusal({ ...base, chains: { light: ['local', 'ghost'] } });
    expect(msg).toMatch(/chains\.light\[1\]/);
    expect(msg).toMatch(/"ghost".*not defined/);
  });
  it('createSupervisor names itself as the place, not defineConfig (which the caller never called)', () => {
    let message = '';
    try {
      createSupervisor({ ...base, chains: { light: ['ghost'] } } as never);
    } catch (e) {
      expect(isConfigError(e)).toBe(true);
      message = (e as Error).message;
    }
    expect(message).toMatch(/^createSupervisor at chains\.light\[0\]: names endpoint "ghost"/);
  });
  it('spawnAgent refuses a field no agent definition has, naming it (a snapshot put in the definition restored nothing)', async () => {
    const s = createSupervisor(base as never);
    try {
      const refused = (definition: unknown) => {
        try {
          s.spawnAgent(definition as never);
        } catch (e) {
          expect(isConfigError(e)).toBe(true);
          return (e as Error).message;
        }
        throw new Error('definition was accepted');
      };
      expect(refused({ name: 'w', chain: 'light', snapshot: {} })).toMatch(
        /^spawnAgent at agents\.w\.snapshot: "snapshot" goes in spawnAgent's second argument/,
      );
      expect(refused({ name: 'w', chain: 'light', maxWait: 5_000 })).toMatch(
        /agents\.w\.maxWait: not a field of an agent definition; the fields are .*maxWaitMs/,
      );
      expect(refused({ name: 'f', noAgent: true, run: async () => 1, chain: 'light' })).toMatch(
        /agents\.f\.chain/,
      );
      // Nothing was spawned by a refused definition; a good one still is.
      expect(s.agents()).toHaveLength(0);
      expect(s.spawnAgent({ name: 'w', chain: 'light', maxWaitMs: 5_000 }).name).toBe('w');
    } finally {
      await s.stop();
    }
  });
  it('negative limits', () => {
    expect(refusal({ ...base, concurrency: { limit: -1 } })).toMatch(/concurrency\.limit/);
    expect(refusal({ ...base, endpoints: [{ ...base.endpoints[0], limits: { rpm: -5 } }] })).toMatch(
      /endpoints\[0\]\.limits\.rpm/,
    );
  });
  it('duplicate endpoint ids and a typo in an option', () => {
    expect(refusal({ ...base, endpoints: [base.endpoints[0], base.endpoints[0]] })).toMatch(
      /duplicate endpoint id/,
    );
    expect(refusal({ ...base, breaker: { openMS: 10 } })).toMatch(/breaker/);
  });
  it('an agent naming an unknown chain or tier is refused at spawn', async () => {
    const s = createSupervisor(base as never);
    expect(() => s.spawnAgent({ name: 'a', chain: 'gold' })).toThrow(
      /agents\.a\.chain.*unknown chain "gold"/,
    );
    expect(() => s.spawnAgent({ name: 'b', chain: 'light', tier: 'vip' })).toThrow(/agents\.b\.tier/);
    await s.stop();
  });
});
