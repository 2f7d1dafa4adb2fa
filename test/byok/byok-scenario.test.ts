import { describe, expect, it } from 'vitest';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import { defineConfig } from '../../src/runtime/runtime-config.ts';
import { loadScenario, parseScenario, resolveScenario } from '../../src/scenarios/load-scenario.ts';
import { toRealProviders } from '../../src/scenarios/real-providers.ts';
import { scenarioByok, scenarioRuntimeConfig } from '../../src/scenarios/scenario-endpoints.ts';
import { CANARY_RUN_SPEC } from './byok-run-spec.ts';

// Scenarios carry runtime.byok: templates may name an emulator flavor, resolved to that listener's base
// URL the way endpoints are; agent8-storm (what `npm start` runs) has templates for the three providers.

const fakeURL = (flavor: string) => `http://127.0.0.1:9/${flavor}`;

function refusal(spec: unknown): { path: string; message: string } {
  try {
    parseScenario(JSON.stringify(spec), 'byok.json');
  } catch (e) {
    if (isConfigError(e)) return { path: e.path, message: e.message };
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('scenario runtime.byok', () => {
  it('agent8-storm: openai, anthropic and gemini templates on the emulator, resolved to its listeners; a valid runtime config', () => {
    const spec = loadScenario(resolveScenario('agent8-storm'));
    expect(spec.emulator?.acceptAnyKey).toBe(true);
    const byok = scenarioByok(spec, { baseURL: fakeURL });
    expect(byok).toEqual({
      idleTtlMs: 2 * 60 * 60 * 1000,
      templates: {
        openai: { provider: 'openai', model: 'gpt-4o', baseURL: fakeURL('openai') },
        anthropic: { provider: 'anthropic', model: 'claude-sonnet-4-6', baseURL: fakeURL('anthropic') },
        gemini: { provider: 'gemini', model: 'gemini-2.5-flash', baseURL: fakeURL('gemini') },
      },
    });
    const config = defineConfig(scenarioRuntimeConfig(spec, { baseURL: fakeURL }));
    expect(Object.keys(config.byok?.templates ?? {})).toEqual(['openai', 'anthropic', 'gemini']);
  });

  it('with --providers real, the templates go to the real APIs (base URL from the environment when set)', () => {
    const spec = loadScenario(resolveScenario('agent8-storm'));
    const real = toRealProviders(spec, {
      OPENAI_API_KEY: 'sk-real-platform',
      ANTHROPIC_API_KEY: 'sk-ant-real-platform',
      GEMINI_API_KEY: 'AIza-real-platform',
      OPENAI_BASE_URL: 'https://proxy.example/v1',
    });
    expect(real.runtime.byok?.templates).toEqual({
      openai: { provider: 'openai', model: 'gpt-4o', baseURL: 'https://proxy.example/v1' },
      anthropic: { provider: 'anthropic', model: 'claude-sonnet-4-6' },
      gemini: { provider: 'gemini', model: 'gemini-2.5-flash' },
    });
    // No emulator is started for a real run: nothing is left to resolve against it.
    const config = defineConfig(
      scenarioRuntimeConfig(real, {
        baseURL: (f) => {
          throw new Error(`no emulator for ${f}`);
        },
      }),
    );
    expect(config.byok?.templates.openai?.baseURL).toBe('https://proxy.example/v1');
  });

  it('refuses a template whose flavor does not speak its provider, an emulator template with a baseURL, and a key in a template', () => {
    const withTemplate = (t: Record<string, unknown>) => ({
      ...CANARY_RUN_SPEC,
      runtime: { ...CANARY_RUN_SPEC.runtime, byok: { templates: { openai: t } } },
    });
    const wrong = refusal(
      withTemplate({ provider: 'anthropic', model: 'claude-sonnet-4-6', emulator: 'openai' }),
    );
    expect(wrong.path).toBe('runtime.byok.templates.openai.emulator');
    expect(wrong.message).toMatch(/the openai listener speaks provider: openai/);
    const both = refusal(
      withTemplate({
        provider: 'openai',
        model: 'gpt-4o',
        emulator: 'openai',
        baseURL: 'http://127.0.0.1:1/v1',
      }),
    );
    expect(both.path).toBe('runtime.byok.templates.openai.baseURL');
    const keyed = refusal(
      withTemplate({ provider: 'openai', model: 'gpt-4o', apiKey: 'sk-should-not-be-here-0001' }),
    );
    expect(keyed.path).toMatch(/^runtime\.byok\.templates\.openai/);
    expect(keyed.message).not.toContain('sk-should-not-be-here-0001');
    const noProfile = {
      ...withTemplate({ provider: 'openai', model: 'gpt-4o', emulator: 'openai' }),
    } as Record<string, unknown>;
    noProfile.runtime = {
      ...(noProfile.runtime as object),
      endpoints: [{ id: 'primary', provider: 'openai', model: 'gpt-4o', apiKeyEnv: 'OPENAI_API_KEY' }],
    };
    delete noProfile.emulator;
    expect(refusal(noProfile).path).toBe('runtime.byok.templates.openai.emulator');
  });

  it('a template without emulator: passes through as written', () => {
    const spec = parseScenario(
      JSON.stringify({
        ...CANARY_RUN_SPEC,
        runtime: {
          ...CANARY_RUN_SPEC.runtime,
          byok: {
            idleTtlMs: 60_000,
            templates: {
              azure: { provider: 'openai', model: 'gpt-4o', baseURL: 'https://azure.example/v1' },
            },
          },
        },
      }),
      'byok.json',
    );
    expect(scenarioByok(spec, { baseURL: fakeURL })).toEqual({
      idleTtlMs: 60_000,
      templates: { azure: { provider: 'openai', model: 'gpt-4o', baseURL: 'https://azure.example/v1' } },
    });
  });
});
