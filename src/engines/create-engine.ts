import { type Clock, systemClock } from '../clock/clock.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import {
  describeEndpoint,
  describeEnvName,
  type EndpointConfig,
  endpointCredential,
  parseEndpointConfig,
} from './endpoint-config.ts';
import { deferredSdkEngine } from './deferred-engine.ts';
import type { Engine } from '../core/engine-types.ts';

/** Options of {@link createEngine}. */
export interface CreateEngineOptions {
  /**
   * The run's clock: call deadlines, latencies, and where reset times are placed (a time-scaled
   * scenario's clock). Default: `systemClock`.
   */
  readonly clock?: Clock;
  /**
   * Wall-clock epoch ms. A provider's instants (Anthropic `anthropic-ratelimit-*-reset`, an HTTP-date
   * `retry-after`) are wall-clock, so they are measured against this when the response arrives and
   * then become a wait on `clock`. Default: `Date.now`; tests inject a fixed one.
   */
  readonly wallNow?: () => number;
  /**
   * Run-clock ms per real ms of the waits a provider sends (`retry-after`, rate-limit resets, a per-day quota's
   * reset): set it to a time-scaled clock's scale for an endpoint that lives in wall time (a real server in a
   * scenario replayed at `timeScale: 15`: its 7 s `retry-after` is 105 s of the run's clock). Leave it at 1 for an
   * endpoint on the run's clock (the built-in emulator). Default: 1.
   */
  readonly wireScale?: number;
  /**
   * Epoch ms whose calendar day the provider's per-day quotas count (Gemini's day ends at midnight Pacific): a
   * per-day quota's disable lasts until that day's end. The provider's day is the wall's, so the default is
   * `wallNow`; an endpoint on the run's clock (the built-in emulator in a scenario) passes the run's clock, so the
   * same scenario disables its key for the same span whatever the hour it runs at. Default: `wallNow`.
   */
  readonly quotaDayNow?: () => number;
}

/** How an engine reads the waits and instants on the wire: the part of {@link CreateEngineOptions} a BYOK key's engine takes too. */
export type EngineWireOptions = Pick<CreateEngineOptions, 'wallNow' | 'wireScale' | 'quotaDayNow'>;

/**
 * Creates the {@link Engine} of one endpoint: Anthropic (`@anthropic-ai/sdk`), OpenAI and every
 * OpenAI-compatible server (`openai`, via `baseURL`), or Gemini native (`@google/genai`). The config
 * is validated first (a bad one throws a `ConfigError` naming the field); the key is read once
 * (`apiKey` or the `apiKeyEnv` variable) and sealed: the SDK client holds only a marker, and the key's
 * bytes are put into each request head on its way to the socket (see `credentialFetch`).
 *
 * Every call has a header deadline and a body idle deadline, sends its `idempotencyKey` as
 * `Idempotency-Key`, makes exactly one HTTP attempt, and rejects only with an `EngineFaultError`.
 *
 * @example
 * ```ts
 * const engine = createEngine({ id: 'primary', provider: 'openai', model: 'gpt-4o-mini', apiKeyEnv: 'OPENAI_API_KEY' });
 * const result = await engine.call({
 *   messages: [{ role: 'user', content: 'Hello' }],
 *   maxTokens: 256,
 *   idempotencyKey: 'run-1/round-3/agent-2',
 * });
 * console.log(result.text, result.usage, result.rateLimit);
 * ```
 */
export function createEngine(config: EndpointConfig, options: CreateEngineOptions = {}): Engine {
  const source = `endpoint "${String((config as { id?: unknown })?.id ?? '?')}"`;
  const parsed = parseEndpointConfig(config, source);
  const credential = endpointCredential(parsed);
  if (parsed.apiKeyEnv && !credential) {
    throw new ConfigError({
      source,
      path: 'apiKeyEnv',
      message: `${describeEnvName(parsed.apiKeyEnv)} is not set; export it or give apiKey`,
    });
  }
  const endpoint = describeEndpoint(parsed);
  const clock = options.clock ?? systemClock;
  const wallNow = options.wallNow ?? Date.now;
  return deferredSdkEngine(
    parsed,
    endpoint,
    clock,
    wallNow,
    credential,
    options.wireScale ?? 1,
    options.quotaDayNow,
  );
}
