import type { Logger } from 'pino';
import type { Clock } from '../../clock/clock.ts';
import type { EmulatorFlavor } from '../../emulator/emulator-types.ts';
import type { ParsedEndpointConfig } from '../../engines/endpoint-config.ts';
import type { Engine } from '../../core/engine-types.ts';

/** Options of `createStatusQuoExecutor`. */
export interface StatusQuoOptions {
  /** The run's clock: blocking sleeps, cooldowns and call times are read on it. Required. */
  readonly clock: Clock;
  /** pino logger; one `confirmed_model=<provider>/<model>` line per answer, as the seed's log had. Default: `createLogger`. */
  readonly logger?: Logger;
  /** Builds an endpoint's engine. Default: the unified adapter (`createEngine`, SDK retries off). */
  readonly createEngine?: (config: ParsedEndpointConfig) => Engine;
  /**
   * Base URL of the emulator listener of a flavor, for endpoints that still carry `emulator:` (a spec as
   * loaded). Default: none — the caller has already resolved every endpoint's `baseURL`.
   */
  readonly baseURL?: (flavor: EmulatorFlavor) => string;
  /**
   * Threads of the old worker's pool: tasks that run at once, each holding its thread through its blocking
   * sleeps. Default `Infinity`: every firing runs at once. Seed 000 does not give the pool size; what it
   * does say is that the old worker had no limit in front of the LLM (six agents hit the 429 together),
   * so unlimited threads is the reading that reproduces its failure without inventing a number. Give a
   * finite size to also see the thread starvation it warned about (new tasks wait behind sleeping ones).
   */
  readonly workers?: number;
  /** Blocking sleeps between rounds of attempts. Default `STATUS_QUO_BACKOFF_MS` (30 s, 60 s, 120 s). */
  readonly backoffMs?: readonly number[];
  /**
   * How long an HTTP 429 puts a model into `_MODEL_COOLDOWN_UNTIL`, ms — or the Retry-After, if longer.
   * Default 60 000 (the seed gives no number; one minute is the common choice and keeps a model out of
   * every chain for longer than the first 30 s sleep, which is what turned one 429 into "all candidate
   * models are cooling down").
   */
  readonly cooldownMs?: number;
  /** The chain's models, in order, looked up among the scenario's endpoints. Default `STATUS_QUO_MODELS`. */
  readonly models?: readonly string[];
}
