import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../../src/config/bounds.ts';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import { defineConfig } from '../../src/runtime/runtime-config.ts';
import { loadScenario, parseScenario } from '../../src/scenarios/load-scenario.ts';
import { runCli } from '../cli/run-cli.ts';

// Issue 19: every number of a scenario and a config has a bound, and crossing it is ONE ConfigError
// naming the file, the line, the field and the bound — before anything is planned, started or
// allocated. Before: rounds.count 1e9 died of heap exhaustion, timeScale 1e308 failed with NaN waits,
// latency.maxMs 1e300 flooded TimeoutOverflowWarning, 10,000 agents committed no round in 540 s.

const dir = mkdtempSync(join(tmpdir(), 'bw-bounds-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function scenario(
  o: {
    count?: string;
    agents?: number;
    items?: number;
    timeScale?: string;
    latencyMax?: string;
    concurrency?: string;
  } = {},
): string {
  const agents = Array.from({ length: o.agents ?? 2 }, (_, i) => `  - { name: A${i}, chain: main }`).join(
    '\n',
  );
  const items = Array.from({ length: o.items ?? 1 }, (_, i) => `    - { id: I${i}, title: item ${i} }`).join(
    '\n',
  );
  return `name: bounds
${o.timeScale ? `timeScale: ${o.timeScale}\n` : ''}runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: sk-emu-bounds-0001 }
  chains: { main: [primary] }
${o.concurrency ? `  concurrency: { limit: ${o.concurrency} }\n` : ''}agents:
${agents}
rounds:
  count: ${o.count ?? '1'}
  items:
${items}
emulator:
  acceptAnyKey: true
${o.latencyMax ? `  latency: { minMs: 0, maxMs: ${o.latencyMax} }\n` : ''}`;
}

function refusal(text: string): Error {
  try {
    parseScenario(text, 'bad.yaml');
  } catch (e) {
    expect(isConfigError(e)).toBe(true);
    return e as Error;
  }
  throw new Error('expected a ConfigError');
}

describe('scenario bounds: one error naming file, line, field and the limit', () => {
  it.each([
    [
      'rounds.count: 1e9',
      { count: '1e9' },
      /^bad\.yaml:\d+ at rounds\.count: must be at most 1,000 rounds; got 1000000000\b/,
    ],
    [
      'timeScale: 1e308',
      { timeScale: '1e308' },
      /^bad\.yaml:2 at timeScale: must be at most 10,000 simulated ms per real ms; got 1e\+308$/,
    ],
    ['timeScale: 0.000001', { timeScale: '0.000001' }, /at timeScale: must be at least 0\.01$/],
    [
      'latency.maxMs: 1e300',
      { latencyMax: '1e300' },
      /at emulator\.latency\.maxMs: must be at most 600,000 ms per call; got 1e\+300$/,
    ],
    [
      'concurrency.limit: 1e6',
      { concurrency: '1000000' },
      /at runtime\.concurrency\.limit: must be at most 1,000 tokens; got 1000000$/,
    ],
    ['10,000 agents', { agents: 10_000 }, /at agents: lists 10,000 agents; at most 1,000 are allowed$/],
    ['1,001 items', { items: 1_001 }, /at rounds\.items: lists 1,001 items; at most 1,000 are allowed$/],
    [
      '800 agents × 30 items in one round',
      { agents: 800, items: 30 },
      /at rounds\.items: makes 24,000 turns per round \(items × agents\); at most 20,000 are allowed in one round$/,
    ],
    [
      '1,000 rounds × 300 turns',
      { count: '1000', agents: 30, items: 10 },
      /at rounds\.count: makes 300,000 turns in all/,
    ],
  ] as const)('%s', (_name, o, expected) => {
    const err = refusal(scenario(o));
    expect(err.message).toMatch(expected);
    expect(err.message).not.toContain('\n');
  });

  it('the limits are what the messages say, and a scenario at the limits loads', () => {
    expect(LIMITS.agents).toBe(1_000);
    expect(LIMITS.rounds).toBe(1_000);
    expect(() =>
      parseScenario(scenario({ agents: 1_000, items: 20, count: '10', timeScale: '10000' }), 'max.yaml'),
    ).not.toThrow();
  });

  it('runtime config numbers are bounded too (defineConfig), naming the field', () => {
    const base = {
      endpoints: [{ id: 'p', provider: 'openai' as const, model: 'm', apiKey: 'sk-x' }],
      chains: { main: ['p'] },
    };
    const cases: [object, RegExp][] = [
      [{ breaker: { openMs: 1e12 } }, /at breaker\.openMs: must be at most 86,400,000 ms; got 1000000000000/],
      [{ agentDefaults: { maxWaitMs: 1e300 } }, /at agentDefaults\.maxWaitMs: must be at most 86,400,000 ms/],
      [
        { byok: { templates: { openai: { provider: 'openai', model: 'm' } }, idleTtlMs: 1e10 } },
        /at byok\.idleTtlMs: must be at most 604,800,000 ms/,
      ],
      [
        { endpoints: [{ ...base.endpoints[0], headersTimeoutMs: 1e10 }] },
        /at endpoints\[0\]\.headersTimeoutMs: must be at most 86,400,000 ms/,
      ],
    ];
    for (const [extra, expected] of cases) {
      expect(() => defineConfig({ ...base, ...extra } as never)).toThrow(expected);
    }
  });

  it('a special file is refused for what it is, not as a folder; a huge file is refused before it is read', () => {
    expect(() => loadScenario('/dev/null')).toThrow(
      /^\/dev\/null: is not a regular file or a folder \(a device, a pipe or a socket\)/,
    );
    const big = join(dir, 'big.yaml');
    writeFileSync(big, `# ${'x'.repeat(11 * 1_048_576)}\n`);
    expect(() => loadScenario(big)).toThrow(/is 11\.0 MB; a scenario file is at most 10 MB/);
  });
});

describe('the real CLI refuses them in one line, at once', () => {
  it.each([
    ['rounds-1e9.yaml', { count: '1e9' }, /at rounds\.count: must be at most 1,000 rounds/],
    ['agents-10k.yaml', { agents: 10_000 }, /at agents: lists 10,000 agents; at most 1,000/],
    [
      'latency-1e300.yaml',
      { latencyMax: '1e300' },
      /at emulator\.latency\.maxMs: must be at most 600,000 ms per call/,
    ],
  ] as const)(
    'breakwater run %s',
    async (file, o, expected) => {
      const path = join(dir, file);
      writeFileSync(path, scenario(o));
      const run = await runCli([
        'run',
        path,
        '--no-stdin',
        '--no-live',
        '--data-dir',
        join(dir, `data-${file}`),
      ]);
      expect(run.code).toBe(1);
      const lines = run.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^breakwater run: .*${file.replace('.', '\\.')}:\\d+ `));
      expect(lines[0]).toMatch(expected);
      expect(run.stderr).not.toMatch(/TimeoutOverflowWarning|heap|NaN/);
      // Refused before the store opened: no data folder was made for a run that never started.
      expect(existsSync(join(dir, `data-${file}`))).toBe(false);
    },
    60_000,
  );

  it('breakwater run /dev/null says what /dev/null is', async () => {
    const run = await runCli([
      'run',
      '/dev/null',
      '--no-stdin',
      '--no-live',
      '--data-dir',
      join(dir, 'data-null'),
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe(
      'breakwater run: /dev/null: is not a regular file or a folder (a device, a pipe or a socket); give a YAML or JSON scenario file',
    );
    expect(existsSync(join(dir, 'data-null'))).toBe(false);
  }, 60_000);
});
