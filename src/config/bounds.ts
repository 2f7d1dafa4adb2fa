import { z } from 'zod';

/**
 * Upper bounds on every number a scenario, a runtime config or an emulator profile may hold. Each
 * keeps a run inside what the process can do: timers (Node's setTimeout holds at most 2^31 − 1 ms),
 * memory (everything planned is built up front), and a round that commits in reasonable time. A value
 * past a bound is refused with a message that names the bound.
 */

/**
 * The longest delay a Node timer can hold, in ms (about 24.8 days).
 *
 * @example
 * ```ts
 * durationMs(MAX_TIMER_MS); // a duration no timer overflows on
 * ```
 */
export const MAX_TIMER_MS = 2_147_483_647;
/**
 * One day, in ms: the bound on windows, cooldowns, waits and leases.
 *
 * @example
 * ```ts
 * durationMs(7 * DAY_MS); // at most a week
 * ```
 */
export const DAY_MS = 86_400_000;

/**
 * The limits, by what they bound.
 *
 * @example
 * ```ts
 * if (agents.length > LIMITS.agents) throw new Error(`at most ${LIMITS.agents} agents`);
 * ```
 */
export const LIMITS = Object.freeze({
  /** Agents in a scenario. */
  agents: 1_000,
  /** Rounds of agenda work. */
  rounds: 1_000,
  /** Agenda items per round. */
  items: 1_000,
  /** Turns of one round (agents × items): one round is one commit. */
  turnsPerRound: 20_000,
  /** Turns of a whole run (all rounds, or every cron firing of a schedule): all are planned up front. */
  turns: 200_000,
  /** Cron jobs of a schedule. */
  jobs: 1_000,
  /** Simulated ms per real ms. */
  timeScaleMax: 10_000,
  timeScaleMin: 0.01,
  /** Emulator latency of one call, simulated ms. */
  latencyMs: 600_000,
  /** Global concurrency tokens. */
  concurrency: 1_000,
  /** Endpoints of a runtime, and entries of one chain. */
  endpoints: 1_000,
  /** Output tokens of one call. */
  maxTokens: 1_000_000,
  /** Requests or tokens per minute an endpoint or an emulator key may declare (a safe integer). */
  perMinute: 1_000_000_000_000_000,
  /** Attempts of one engine call. */
  attempts: 10_000,
});

/** A number written for humans: `20,000`, `0.01`. */
function show(n: number): string {
  return Number.isInteger(n) ? n.toLocaleString('en-US') : String(n);
}

/**
 * A zod number in `[min, max]`, refused with a message naming the bound that was crossed, e.g.
 * `must be at most 1,000 (the limit of rounds.count); got 1000000000`.
 *
 * @example
 * ```ts
 * const count = boundedNumber({ int: true, min: 1, max: LIMITS.rounds, what: 'rounds' });
 * ```
 */
export function boundedNumber(o: {
  readonly int?: boolean;
  /** Inclusive lower bound. Default: none. */
  readonly min?: number;
  /** Exclusive lower bound (a positive number: `gt: 0`). Default: none. */
  readonly gt?: number;
  readonly max: number;
  /** What the bound is about, for the message (`ms`, `agents`). */
  readonly what: string;
}) {
  // The bound first: its message is the one a user sees for 1e9 or 1e308.
  let n = z.number().max(o.max, {
    error: (iss) => `must be at most ${show(o.max)} ${o.what}; got ${String(iss.input)}`,
  });
  if (o.gt !== undefined) n = n.gt(o.gt, { error: `must be greater than ${show(o.gt)}` });
  if (o.min !== undefined) n = n.min(o.min, { error: `must be at least ${show(o.min)}` });
  if (o.int) n = n.int({ error: 'must be a whole number' });
  return n;
}

/**
 * A zod array with at most `max` entries, refused with a message naming the limit.
 *
 * @example
 * ```ts
 * const agents = boundedArray(agentSchema, LIMITS.agents, 'agents').min(1);
 * ```
 */
export function boundedArray<T extends z.ZodType>(item: T, max: number, what: string) {
  return z.array(item).max(max, {
    error: (iss) =>
      `lists ${Array.isArray(iss.input) ? show(iss.input.length) : 'too many'} ${what}; at most ${show(max)} are allowed`,
  });
}

/**
 * A positive integer number of ms, at most `max` (default: one day).
 *
 * @example
 * ```ts
 * const leaseMs = durationMs().default(120_000);
 * ```
 */
export function durationMs(max = DAY_MS) {
  return boundedNumber({ int: true, gt: 0, max, what: 'ms' });
}

/**
 * A non-negative integer number of ms, at most `max` (default: one day).
 *
 * @example
 * ```ts
 * const maxWaitMs = nonNegativeMs().default(10_000);
 * ```
 */
export function nonNegativeMs(max = DAY_MS) {
  return boundedNumber({ int: true, min: 0, max, what: 'ms' });
}
