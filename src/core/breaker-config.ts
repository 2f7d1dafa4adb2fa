import { ConfigError } from './errors/config-error.ts';
import type { FaultKind } from './fault.ts';

/*
 * The one owner of a circuit breaker's thresholds: their type, their defaults (the numbers of the seed incidents)
 * and their check. The breaker machine keeps a resolved config in its context; the runtime's config schema takes
 * its defaults and bounds from here, so the two can never disagree again (they did: `failureRateThreshold`
 * refused 0 and 1 in one and took them in the other).
 */

/** The thresholds of one breaker. Plain data: it is kept in context and persisted with it. */
export interface BreakerConfig {
  /** OPEN when failures / calls in the window is greater than this (0–1). Default 0.3. */
  readonly failureRateThreshold: number;
  /** Length of the sliding window for the failure-rate rule, in ms. Default 60 000. */
  readonly windowMs: number;
  /** The failure-rate rule applies only once the window holds at least this many calls. Default 5. */
  readonly minCallsInWindow: number;
  /** OPEN after this many consecutive faults of `consecutiveKinds`. Default 3. */
  readonly consecutiveToOpen: number;
  /** Fault kinds that count towards `consecutiveToOpen`. Default `['rate_limited', 'network', 'timeout']`. */
  readonly consecutiveKinds: readonly FaultKind[];
  /**
   * OPEN at the first stall (a `CALL_FAILED` with `stall`: a call cut by its own deadline, with no headers or a body
   * that stopped coming), whatever the streak: every call to a stalling endpoint costs its caller a whole deadline,
   * and only a HALF-OPEN probe can tell it answers again. False: a stall counts like any other timeout. Default true.
   */
  readonly openOnStall: boolean;
  /**
   * Minimum cooldown of an OPEN that a stall caused (`openOnStall`), in ms; `openMs` when that is shorter. One stall
   * says little about the next call (a provider's hiccup), and a chain with nowhere else to go would otherwise answer
   * degraded, without a single call, for the whole `openMs` (longer than an agent's default max wait): the probes
   * come after this instead, and a failed probe reopens for `openMs` as any other. Default 5 000.
   */
  readonly stallOpenMs: number;
  /** Minimum cooldown of OPEN, in ms; a longer Retry-After extends it. Default 30 000. */
  readonly openMs: number;
  /** Consecutive good probes in HALF-OPEN that close the circuit. Default 2. */
  readonly probesToClose: number;
  /**
   * Longest minimum cooldown after failed probes, in ms. Each failed probe after the first doubles the minimum
   * (`openMs`, 2×, 4×… up to this; a longer Retry-After still wins), so an endpoint down for long is not probed
   * every `openMs`; closing resets it. Set it to `openMs` for a fixed cooldown. Default 300 000.
   */
  readonly maxOpenMs: number;
}

/** A breaker's input: any subset of {@link BreakerConfig} (`{}` for all defaults). */
export type BreakerInput = Partial<BreakerConfig>;

/** The defaults of every {@link BreakerConfig} field (the numbers of the seed incidents). */
export const DEFAULT_BREAKER_CONFIG: BreakerConfig = Object.freeze({
  failureRateThreshold: 0.3,
  windowMs: 60_000,
  minCallsInWindow: 5,
  consecutiveToOpen: 3,
  consecutiveKinds: Object.freeze(['rate_limited', 'network', 'timeout'] as FaultKind[]),
  openOnStall: true,
  stallOpenMs: 5_000,
  openMs: 30_000,
  probesToClose: 2,
  maxOpenMs: 300_000,
});

/** Where a bad breaker input is said to come from. */
const SOURCE = 'breakerMachine input';

/**
 * Fills defaults and validates a breaker input. Throws {@link ConfigError} naming the bad field.
 *
 * @example
 * ```ts
 * resolveBreakerConfig({ openMs: 10_000 }).failureRateThreshold; // 0.3
 * ```
 */
export function resolveBreakerConfig(input: BreakerInput = {}): BreakerConfig {
  const config = { ...DEFAULT_BREAKER_CONFIG, ...stripUndefined(input) };
  const { failureRateThreshold: rate } = config;
  if (!(rate >= 0 && rate <= 1)) fail('failureRateThreshold', rate, 'a number between 0 and 1');
  if (!(config.windowMs > 0)) fail('windowMs', config.windowMs, 'a positive number of ms');
  if (!(Number.isInteger(config.minCallsInWindow) && config.minCallsInWindow >= 1)) {
    fail('minCallsInWindow', config.minCallsInWindow, 'an integer ≥ 1');
  }
  if (!(Number.isInteger(config.consecutiveToOpen) && config.consecutiveToOpen >= 1)) {
    fail('consecutiveToOpen', config.consecutiveToOpen, 'an integer ≥ 1');
  }
  if (!(config.openMs >= 0)) fail('openMs', config.openMs, 'a number of ms ≥ 0');
  if (!(config.stallOpenMs >= 0)) fail('stallOpenMs', config.stallOpenMs, 'a number of ms ≥ 0');
  if (!(config.maxOpenMs >= 0)) fail('maxOpenMs', config.maxOpenMs, 'a number of ms ≥ 0');
  if (!(Number.isInteger(config.probesToClose) && config.probesToClose >= 1)) {
    fail('probesToClose', config.probesToClose, 'an integer ≥ 1');
  }
  if (!Array.isArray(config.consecutiveKinds))
    fail('consecutiveKinds', config.consecutiveKinds, 'a list of fault kinds');
  if (typeof config.openOnStall !== 'boolean') fail('openOnStall', config.openOnStall, 'true or false');
  return Object.freeze({ ...config, consecutiveKinds: Object.freeze([...config.consecutiveKinds]) });
}

function fail(path: string, value: unknown, expected: string): never {
  throw new ConfigError({ source: SOURCE, path, message: `is ${String(value)}; set it to ${expected}` });
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
