import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import { runScenario } from '../../src/runs/run-scenario.ts';
import { toRealProviders } from '../../src/scenarios/real-providers.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';

let emulator: Emulator;
let database: BreakwaterDatabase;

beforeAll(async () => {
  // Stands in for the real APIs: the run below does not know it is an emulator.
  emulator = await startEmulator({ profile: { seed: 12 } });
  database = await openDatabase({ dataDir: ':memory:' });
});
afterAll(async () => {
  await database.close();
  await emulator.close();
});

const spec: ScenarioSpec = {
  name: 'real-drill',
  timeScale: 30,
  runtime: {
    endpoints: [
      {
        id: 'sonnet',
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        emulator: 'anthropic',
        apiKey: 'sk-ant-emulated-only-0001',
      },
      {
        id: 'mini',
        provider: 'openai',
        model: 'gpt-4o-mini',
        emulator: 'openai',
        apiKey: 'sk-emulated-only-000000002',
      },
    ],
    chains: { main: ['sonnet', 'mini'] },
  },
  agents: [{ name: 'Kai', chain: 'main' }],
  rounds: { count: 1, items: [{ id: 'I1', title: 'Status' }] },
  emulator: { seed: 1 },
};

describe('the same scenario against the real providers', () => {
  it('takes keys and base URLs from the environment, drops the emulator and runs at real speed', () => {
    const real = toRealProviders(spec, {
      ANTHROPIC_API_KEY: 'sk-ant-real',
      OPENAI_API_KEY: 'sk-real',
      OPENAI_BASE_URL: 'https://proxy.example/v1',
    });
    expect(real.emulator).toBeUndefined();
    expect(real.timeScale).toBe(1);
    expect(real.runtime.endpoints[0]).toMatchObject({
      id: 'sonnet',
      provider: 'anthropic',
      apiKeyEnv: 'ANTHROPIC_API_KEY',
    });
    expect(real.runtime.endpoints[0]).not.toHaveProperty('apiKey');
    expect(real.runtime.endpoints[0]).not.toHaveProperty('baseURL');
    expect(real.runtime.endpoints[1]).toMatchObject({
      apiKeyEnv: 'OPENAI_API_KEY',
      baseURL: 'https://proxy.example/v1',
    });
  });

  it('a missing key is refused with one error naming the endpoint and the variable', () => {
    try {
      toRealProviders(spec, { OPENAI_API_KEY: 'sk-real' });
      throw new Error('accepted');
    } catch (e) {
      expect(isConfigError(e)).toBe(true);
      expect((e as Error).message).toMatch(/endpoint "sonnet" \(anthropic\) needs ANTHROPIC_API_KEY/);
      expect((e as Error).message.split('\n')).toHaveLength(1);
    }
  });

  it('runs end to end in real mode (here against servers at the given base URLs)', async () => {
    const env = {
      ANTHROPIC_API_KEY: 'sk-ant-from-the-environment-01',
      OPENAI_API_KEY: 'sk-from-the-environment-000002',
      ANTHROPIC_BASE_URL: emulator.baseURL('anthropic'),
      OPENAI_BASE_URL: emulator.baseURL('openai'),
    };
    // The engines read keys from process.env, as they would in production.
    for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v);
    const result = await runScenario({
      scenario: spec,
      providers: 'real',
      env,
      database,
      runId: `real-${Date.now()}`,
    }).finally(() => vi.unstubAllEnvs());
    expect(result.run.status).toBe('completed');
    expect(result.emulatorStats).toBeUndefined();
    expect(emulator.stats().byFlavor.anthropic).toBeGreaterThan(0);
    const turns = await createRunStore(database).listTurns(result.runId);
    expect(turns.map((t) => t.endpointId)).toEqual(['sonnet']);
    expect((result.run.config as { providers: string }).providers).toBe('real');
  });
});
