import type { EndpointConfig } from '../engines/endpoint-config.ts';
import { type Emulator, type EmulatorOptions, startEmulator } from '../emulator/emulator-server.ts';
import type { EmulatorFlavor } from '../emulator/emulator-types.ts';

/** Which provider kind speaks each emulator flavor's wire format. */
const PROVIDER_OF: Readonly<Record<EmulatorFlavor, EndpointConfig['provider']>> = {
  anthropic: 'anthropic',
  openai: 'openai',
  gemini: 'gemini',
  vllm: 'openai-compatible',
  ollama: 'openai-compatible',
  'gemini-compat': 'openai-compatible',
};

/** A default model name per flavor, so a test can say only which wire format it wants. */
const MODEL_OF: Readonly<Record<EmulatorFlavor, string>> = {
  anthropic: 'claude-sonnet-4-6',
  openai: 'gpt-4o-mini',
  gemini: 'gemini-2.5-flash',
  vllm: 'meta-llama/Llama-3.1-8B-Instruct',
  ollama: 'llama3.1',
  'gemini-compat': 'gemini-2.5-flash',
};

/**
 * Options of {@link EmulatorFixture.endpoint}.
 *
 * @example
 * ```ts
 * fixture.endpoint('primary', 'anthropic', { model: 'claude-opus-4-1', headersTimeoutMs: 2_000 });
 * ```
 */
export interface FixtureEndpointOptions {
  /** Model name. Default: a usual one for the flavor (`claude-sonnet-4-6`, `gpt-4o-mini`, `gemini-2.5-flash`, …). */
  readonly model?: string;
  /** The key sent (the emulator accepts any unless its profile lists keys). Default `sk-test-<id>-000000000000`. */
  readonly apiKey?: string;
  /** Header deadline of each call, ms. Default 5 000 (a test should fail fast, not after the production 60 s). */
  readonly headersTimeoutMs?: number;
  /** Body idle deadline of each call, ms. Default 5 000. */
  readonly idleTimeoutMs?: number;
}

/**
 * A running in-process emulator plus endpoint configs that point at it.
 *
 * @example
 * ```ts
 * const fixture: EmulatorFixture = await startEmulatorFixture();
 * fixture.emulator.addFault({ kind: 'overloaded', match: { flavor: 'anthropic' } });
 * ```
 */
export interface EmulatorFixture {
  /** The emulator itself: `addFault`, `stats`, `reset`, `clearFaults`, `baseURL`. */
  readonly emulator: Emulator;
  /** An endpoint config (for `createSupervisor`) that calls this emulator in `flavor`'s wire format. */
  endpoint(id: string, flavor: EmulatorFlavor, options?: FixtureEndpointOptions): EndpointConfig;
  /** Clears every fault rule and counter (between tests). */
  reset(): void;
  /** Closes the emulator. Safe to call twice. */
  close(): Promise<void>;
}

/**
 * Starts the provider emulator in this process for a test, and builds endpoint configs pointing at it: the real
 * SDKs over real HTTP on 127.0.0.1, no key and no network.
 *
 * @example
 * ```ts
 * import { createSupervisor } from 'breakwater';
 * import { startEmulatorFixture } from 'breakwater/testing';
 * const fixture = await startEmulatorFixture();
 * fixture.emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, retryAfterMs: 30_000 });
 * const supervisor = createSupervisor({
 *   endpoints: [fixture.endpoint('primary', 'anthropic'), fixture.endpoint('backup', 'openai')],
 *   chains: { premium: ['primary', 'backup'] },
 * });
 * const turn = await supervisor.call({ chain: 'premium', messages: [{ role: 'user', content: 'Hi' }] });
 * turn.outcome; // 'fallback'
 * await supervisor.stop();
 * await fixture.close();
 * ```
 */
export async function startEmulatorFixture(options: EmulatorOptions = {}): Promise<EmulatorFixture> {
  const emulator = await startEmulator(options);
  let closed: Promise<void> | undefined;
  return {
    emulator,
    endpoint(id, flavor, o = {}) {
      const provider = PROVIDER_OF[flavor];
      const base = {
        id,
        model: o.model ?? MODEL_OF[flavor],
        apiKey: o.apiKey ?? `sk-test-${id}-000000000000`,
        baseURL: emulator.baseURL(flavor),
        headersTimeoutMs: o.headersTimeoutMs ?? 5_000,
        idleTimeoutMs: o.idleTimeoutMs ?? 5_000,
      };
      return provider === 'openai-compatible'
        ? { ...base, provider, flavor: flavor as 'vllm' | 'ollama' | 'gemini-compat' }
        : { ...base, provider };
    },
    reset() {
      emulator.clearFaults();
      emulator.reset();
    },
    close() {
      closed ??= emulator.close();
      return closed;
    },
  };
}
