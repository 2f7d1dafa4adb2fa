import type { EmulatorFlavor } from '../emulator/emulator-types.ts';
import type { EndpointConfig } from '../engines/endpoint-config.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import type { RuntimeConfigInput } from '../runtime/runtime-config.ts';
import type { ScenarioByokInput } from './scenario-base-schema.ts';
import type { ScenarioSpec } from './scenario-types.ts';

/** Options of {@link scenarioEndpoints} and {@link scenarioRuntimeConfig}. */
export interface ScenarioEndpointOptions {
  /**
   * Base URL of the emulator listener of a flavor (`(f) => emulator.baseURL(f)`). Required when the
   * scenario has `emulator:` endpoints. Default: none.
   */
  readonly baseURL?: (flavor: EmulatorFlavor) => string;
}

/**
 * The scenario's endpoints as plain {@link EndpointConfig}s: an `emulator:` endpoint gets the
 * listener's `baseURL`, and an `apiKey` naming an alias of the emulator profile becomes that key; real
 * endpoints pass through unchanged (`apiKeyEnv`, `baseURL` as written).
 *
 * @example
 * ```ts
 * const endpoints = scenarioEndpoints(spec, { baseURL: (f) => emulator.baseURL(f) });
 * endpoints.map((e) => e.baseURL); // ['http://127.0.0.1:41235/v1', …]
 * ```
 */
export function scenarioEndpoints(
  spec: ScenarioSpec,
  options: ScenarioEndpointOptions = {},
): EndpointConfig[] {
  const keys = new Map((spec.emulator?.keys ?? []).map((k) => [k.alias, k.key]));
  return spec.runtime.endpoints.map((e, i) => {
    const { emulator, ...config } = e;
    if (emulator === undefined) return { ...config };
    if (!options.baseURL) {
      throw new ConfigError({
        source: `scenario "${spec.name}"`,
        path: `runtime.endpoints[${i}].emulator`,
        message: `endpoint "${e.id}" is served by the emulator; start one and pass its baseURL resolver`,
      });
    }
    const apiKey = config.apiKey !== undefined ? (keys.get(config.apiKey) ?? config.apiKey) : undefined;
    return { ...config, ...(apiKey !== undefined ? { apiKey } : {}), baseURL: options.baseURL(emulator) };
  });
}

/**
 * The scenario's BYOK config with each `emulator:` template pointed at that listener (`baseURL`), the
 * way {@link scenarioEndpoints} resolves endpoints; `undefined` when the scenario has no `runtime.byok`.
 *
 * @example
 * ```ts
 * scenarioByok(spec, { baseURL: (f) => emulator.baseURL(f) })?.templates.openai?.baseURL; // 'http://127.0.0.1:41235/v1'
 * ```
 */
export function scenarioByok(
  spec: ScenarioSpec,
  options: ScenarioEndpointOptions = {},
): RuntimeConfigInput['byok'] {
  const byok = spec.runtime.byok as ScenarioByokInput | undefined;
  if (!byok) return undefined;
  const templates = Object.fromEntries(
    Object.entries(byok.templates).map(([name, t]) => {
      const { emulator, ...template } = t;
      if (emulator === undefined) return [name, template];
      if (!options.baseURL) {
        throw new ConfigError({
          source: `scenario "${spec.name}"`,
          path: `runtime.byok.templates.${name}.emulator`,
          message: `BYOK template "${name}" is served by the emulator; start one and pass its baseURL resolver`,
        });
      }
      return [name, { ...template, baseURL: options.baseURL(emulator) }];
    }),
  );
  return { ...byok, templates };
}

/**
 * The scenario's `runtime:` as a config `createSupervisor` accepts: endpoints resolved by
 * {@link scenarioEndpoints}, BYOK templates by {@link scenarioByok}, everything else as written (defaults
 * filled by the loader).
 *
 * @example
 * ```ts
 * const emulator = await startEmulator({ profile: spec.emulator, clock });
 * const supervisor = createSupervisor(scenarioRuntimeConfig(spec, { baseURL: (f) => emulator.baseURL(f) }), { clock });
 * ```
 */
export function scenarioRuntimeConfig(
  spec: ScenarioSpec,
  options: ScenarioEndpointOptions = {},
): RuntimeConfigInput {
  const byok = scenarioByok(spec, options);
  return {
    ...spec.runtime,
    endpoints: scenarioEndpoints(spec, options),
    ...(byok ? { byok } : {}),
  } as RuntimeConfigInput;
}

/**
 * The simulated epoch ms a run of the scenario starts at: `start`, else an absolute `schedule.from`,
 * else `now`.
 *
 * @example
 * ```ts
 * const clock = createScaledClock({ origin: scenarioOrigin(spec, Date.now()), scale: spec.timeScale ?? 1 });
 * ```
 */
export function scenarioOrigin(spec: ScenarioSpec, now: number): number {
  if (spec.start) return Date.parse(spec.start);
  const from = spec.schedule?.from;
  if (from && /T/.test(from)) return Date.parse(from);
  return now;
}
