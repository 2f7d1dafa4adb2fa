import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ConfigError, isConfigError } from '../../src/core/errors/config-error.ts';
import { loadEmulatorProfile } from '../../src/emulator/emulator-profile.ts';
import { startEmulator } from '../../src/emulator/emulator-server.ts';

const dir = mkdtempSync(join(tmpdir(), 'bw-emu-profile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

function configErrorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    if (isConfigError(e)) return e;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

const GOOD = `seed: 42
timeScale: 60
latency: { minMs: 10, maxMs: 50 }
answerTokens: 40
keys:
  - alias: primary
    key: sk-primary-0001
    credit: 200000
    quotas:
      default: { rpm: 50, tpm: 100000 }
      models: { claude-sonnet-4-6: { rpm: 5, itpm: 30000, otpm: 8000 } }
defaultQuotas: { rpm: null, tpm: null }
faults:
  - { kind: rate_limit, match: { flavor: anthropic }, probability: 0.2, retryAfterMs: 5000 }
  - { kind: overloaded, window: { fromMs: 1000, toMs: 2000 } }
  - { kind: connection_reset, count: 2 }
`;

describe('emulator profiles: YAML or JSON, validated with one ConfigError naming file and field', () => {
  it('loads a full YAML profile', () => {
    const p = loadEmulatorProfile(file('good.yaml', GOOD));
    expect(p.seed).toBe(42);
    expect(p.keys?.[0]?.quotas?.models?.['claude-sonnet-4-6']?.otpm).toBe(8000);
    expect(p.faults).toHaveLength(3);
  });

  it('loads JSON and plain objects', () => {
    const path = file('good.json', JSON.stringify({ seed: 1, faults: [{ kind: 'html_502' }] }));
    expect(loadEmulatorProfile(path).faults?.[0]?.kind).toBe('html_502');
    expect(loadEmulatorProfile({ answerTokens: 5 }).answerTokens).toBe(5);
  });

  it('probability 2 → "<file> at faults[2].probability: must be between 0 and 1"', () => {
    const path = file('profile.yaml', GOOD.replace('count: 2 }', 'count: 2, probability: 2 }'));
    const e = configErrorOf(() => loadEmulatorProfile(path));
    expect(e.message).toBe(`${path} at faults[2].probability: must be between 0 and 1`);
    expect(e.path).toBe('faults[2].probability');
    expect(e.source).toBe(path);
  });

  it('an unknown field is refused by name', () => {
    const e = configErrorOf(() => loadEmulatorProfile(file('typo.yaml', 'latencyy: { minMs: 1 }\n')));
    expect(e.path).toBe('latencyy');
    expect(e.message).toContain('is not a known field');
  });

  it('a wrong type names the field and the expected type', () => {
    const e = configErrorOf(() =>
      loadEmulatorProfile(file('type.yaml', 'keys:\n  - alias: a\n    key: 12\n')),
    );
    expect(e.message).toMatch(/at keys\[0\]\.key: must be a string$/);
  });

  it('an unknown fault kind lists the valid kinds', () => {
    const e = configErrorOf(() =>
      loadEmulatorProfile(file('kind.yaml', 'faults:\n  - kind: meteor_strike\n')),
    );
    expect(e.path).toBe('faults[0].kind');
    expect(e.message).toContain('must be one of rate_limit, rate_limit_no_retry_after');
  });

  it('bad YAML → one ConfigError with the line', () => {
    const e = configErrorOf(() => loadEmulatorProfile(file('bad.yaml', 'seed: 1\nkeys: [\n  - alias: x\n')));
    expect(e.message).toContain('is not valid YAML');
    expect(e.line).toBeGreaterThan(0);
  });

  it('cross-field checks: window.toMs after fromMs, unique aliases, known file types', () => {
    expect(
      configErrorOf(() =>
        loadEmulatorProfile({ faults: [{ kind: 'overloaded', window: { fromMs: 5, toMs: 5 } }] }),
      ).path,
    ).toBe('faults[0].window.toMs');
    expect(
      configErrorOf(() =>
        loadEmulatorProfile({
          keys: [
            { alias: 'a', key: 'k1' },
            { alias: 'a', key: 'k2' },
          ],
        }),
      ).path,
    ).toBe('keys[1].alias');
    expect(configErrorOf(() => loadEmulatorProfile(file('p.toml', 'seed = 1'))).message).toContain(
      '.json, .yaml or .yml',
    );
  });

  it('startEmulator refuses a malformed profile before listening; addFault validates like the profile', async () => {
    await expect(startEmulator({ profile: { timeScale: -1 } })).rejects.toThrow(
      /timeScale: must be greater than 0/,
    );
    const emu = await startEmulator({ profile: file('ok.yaml', GOOD) });
    try {
      expect(() => emu.addFault({ kind: 'rate_limit', probability: 3 })).toThrow(
        /probability: must be between 0 and 1/,
      );
      const res = await fetch(`${emu.controlURL}/_emulator/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'nope' }),
      });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ field: 'kind' });
    } finally {
      await emu.close();
    }
  });
});
