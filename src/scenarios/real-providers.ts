import type { EmulatorFlavor } from '../emulator/emulator-types.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import type { ScenarioByokInput } from './scenario-base-schema.ts';
import type { ScenarioEndpoint, ScenarioSpec } from './scenario-types.ts';

/** Where a real provider's key and (optional) base URL come from, per emulator flavor. */
export const REAL_PROVIDER_ENV: Readonly<
  Record<EmulatorFlavor, { readonly key?: string; readonly baseURL: string }>
> = Object.freeze({
  anthropic: { key: 'ANTHROPIC_API_KEY', baseURL: 'ANTHROPIC_BASE_URL' },
  openai: { key: 'OPENAI_API_KEY', baseURL: 'OPENAI_BASE_URL' },
  gemini: { key: 'GEMINI_API_KEY', baseURL: 'GEMINI_BASE_URL' },
  'gemini-compat': { key: 'GEMINI_API_KEY', baseURL: 'GEMINI_COMPAT_BASE_URL' },
  vllm: { baseURL: 'VLLM_BASE_URL' },
  ollama: { baseURL: 'OLLAMA_BASE_URL' },
});

/**
 * The same scenario against the real APIs: every `emulator:` endpoint becomes a real endpoint of its provider
 * with its key from the environment (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`) and its base URL
 * from `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL` / `GEMINI_BASE_URL` / `VLLM_BASE_URL` / `OLLAMA_BASE_URL` when
 * set (else the provider's default). The emulator section is dropped and time runs at real speed. A missing key
 * is refused with one ConfigError naming the endpoint and the variable to set.
 *
 * @example
 * ```ts
 * const live = toRealProviders(loadScenario(resolveScenario('agent8-storm')), process.env);
 * ```
 */
export function toRealProviders(
  spec: ScenarioSpec,
  env: Readonly<Record<string, string | undefined>>,
): ScenarioSpec {
  const endpoints: ScenarioEndpoint[] = spec.runtime.endpoints.map((e, i) => {
    const { emulator: flavor, apiKey: _emulatorKey, ...rest } = e;
    if (!flavor) return e;
    const names = REAL_PROVIDER_ENV[flavor];
    if (names.key && !env[names.key]) {
      throw new ConfigError({
        source: `scenario "${spec.name}"`,
        path: `runtime.endpoints[${i}]`,
        message: `endpoint "${e.id}" (${flavor}) needs ${names.key} in the environment to run against the real API; set it, or run without --providers real`,
      });
    }
    const baseURL = env[names.baseURL];
    return {
      ...rest,
      ...(names.key ? { apiKeyEnv: names.key } : {}),
      ...(baseURL ? { baseURL } : {}),
    } as ScenarioEndpoint;
  });
  const byok = realByok(spec, env);
  const { emulator: _profile, ...withoutEmulator } = spec;
  return {
    ...withoutEmulator,
    timeScale: 1,
    runtime: { ...spec.runtime, endpoints, ...(byok ? { byok } : {}) },
  };
}

/** BYOK templates on the emulator become templates of the real provider (base URL from the environment when set). */
function realByok(
  spec: ScenarioSpec,
  env: Readonly<Record<string, string | undefined>>,
): ScenarioSpec['runtime']['byok'] {
  const byok = spec.runtime.byok as ScenarioByokInput | undefined;
  if (!byok) return undefined;
  const templates = Object.fromEntries(
    Object.entries(byok.templates).map(([name, t]) => {
      const { emulator: flavor, ...rest } = t;
      const baseURL = flavor ? env[REAL_PROVIDER_ENV[flavor].baseURL] : undefined;
      return [name, { ...rest, ...(baseURL ? { baseURL } : {}) }];
    }),
  );
  return { ...byok, templates };
}
