import type { ParsedEndpointConfig } from '../../engines/endpoint-config.ts';
import { ConfigError } from '../../core/errors/config-error.ts';
import type { ScenarioSpec } from '../../scenarios/scenario-types.ts';

/**
 * Seed 000's one chain for every agent: openai-codex/gpt-5.5 → anthropic/claude-sonnet-4-6.
 *
 * @example
 * ```ts
 * createStatusQuoExecutor(spec, { clock, models: STATUS_QUO_MODELS });
 * ```
 */
export const STATUS_QUO_MODELS: readonly string[] = Object.freeze(['gpt-5.5', 'claude-sonnet-4-6']);

/**
 * `_call_llm_with_guardrails()`'s blocking sleeps between rounds of attempts: 30 s, 60 s, 120 s (210 s).
 *
 * @example
 * ```ts
 * STATUS_QUO_BACKOFF_MS.reduce((a, b) => a + b); // 210000
 * ```
 */
export const STATUS_QUO_BACKOFF_MS: readonly number[] = Object.freeze([30_000, 60_000, 120_000]);

/** One model of the old chain. */
export interface ChainLink {
  readonly endpoint: ParsedEndpointConfig;
  /** What `_MODEL_COOLDOWN_UNTIL` is keyed by: the model name, whatever provider, key or endpoint. */
  readonly model: string;
}

/**
 * The old worker's chain: the scenario's endpoints whose model is each of `models` (by `model`, or
 * `provider/model`), in order; when one is missing (a scenario without seed 000's models), the first
 * endpoints of the scenario's first chain, so any scenario can be run under the old policy.
 *
 * @example
 * ```ts
 * resolveStatusQuoChain(spec, endpoints).map((l) => l.model); // ['gpt-5.5', 'claude-sonnet-4-6']
 * ```
 */
export function resolveStatusQuoChain(
  spec: ScenarioSpec,
  endpoints: readonly ParsedEndpointConfig[],
  models: readonly string[] = STATUS_QUO_MODELS,
): ChainLink[] {
  const byModel = models.map((m) => endpoints.find((e) => e.model === m || `${e.provider}/${e.model}` === m));
  if (byModel.every((e) => e !== undefined)) return byModel.map((e) => ({ endpoint: e!, model: e!.model }));
  const firstChain = Object.values(spec.runtime.chains)[0] ?? [];
  const fallback = [...new Set(firstChain)]
    .slice(0, models.length)
    .map((id) => endpoints.find((e) => e.id === id))
    .filter((e): e is ParsedEndpointConfig => e !== undefined);
  if (fallback.length === 0) {
    throw new ConfigError({
      source: `scenario "${spec.name}"`,
      path: 'runtime.endpoints',
      message: `the status-quo policy needs endpoints with models ${models.join(' and ')} (or a chain to take two from)`,
    });
  }
  return fallback.map((e) => ({ endpoint: e, model: e.model }));
}
