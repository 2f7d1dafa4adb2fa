/**
 * The circuit breaker of one engine endpoint (provider + key + model), as an XState v5 machine.
 *
 * CLOSED → OPEN when more than `failureRateThreshold` of the calls in the last `windowMs` failed
 * (with at least `minCallsInWindow` calls), or after `consecutiveToOpen` consecutive faults of the
 * `consecutiveKinds`. OPEN lets nothing upstream until `openUntil`; then HALF-OPEN admits one probe at
 * a time; `probesToClose` consecutive good probes close it, a bad probe reopens it.
 *
 * Every event carries its time (`at`, epoch ms), so the machine never reads a clock and holds no timer:
 * the deadline lives in context (`openUntil`), and its owner sends `TICK` once it is due (the runtime's
 * endpoint health does, from its one timer heap). One driver for OPEN → HALF-OPEN, a live actor and a
 * restored one behave the same, and nothing depends on XState's (unpersisted) delayed transitions.
 */
import { assign, setup } from 'xstate';
import { type BreakerConfig, type BreakerInput, resolveBreakerConfig } from '../src/core/breaker-config.ts';
import { type FaultKind, isTransientFault } from '../src/core/fault.ts';
import {
  type OutcomeBucket,
  outcomeTotals,
  pruneOutcomes,
  recordOutcome,
} from '../src/core/outcome-window.ts';

/**
 * Bumped whenever the context shape or the states change, so a persisted snapshot of an older
 * shape is recognised (and dropped) instead of being restored into the wrong machine.
 */
export const BREAKER_MACHINE_VERSION = 2;

/** Why the circuit is (or last was) open. */
export type BreakerOpenReason = 'failure_rate' | 'consecutive' | 'stalled' | 'probe_failed' | 'forced';

/** The breaker's context: plain data, safe to persist. */
export interface BreakerContext {
  readonly config: BreakerConfig;
  /** Outcomes of the calls in the window (bucketed, pruned), for the failure-rate rule. */
  readonly outcomes: readonly OutcomeBucket[];
  /** Consecutive faults of `consecutiveKinds` since the last success. */
  readonly consecutive: number;
  /** When the current open period started (the last (re)opening), or null when not open. */
  readonly openedAt: number | null;
  /** Epoch ms at which OPEN may move to HALF-OPEN, or null when not open. */
  readonly openUntil: number | null;
  readonly openReason: BreakerOpenReason | null;
  /** The fault kind that last opened the circuit, when a fault did. */
  readonly lastFault: FaultKind | null;
  /** Good probes so far in this HALF-OPEN period. */
  readonly goodProbes: number;
  readonly probeInFlight: boolean;
  /** How many times the circuit has opened since the actor was created. */
  readonly openCount: number;
  /** Failed probes since the circuit last closed (absent in snapshots of older releases: 0). */
  readonly failedProbes?: number;
  /** Probes answered with a 429 and Retry-After since the circuit last closed (absent in older snapshots: 0). */
  readonly limitedProbes?: number;
}

/**
 * Events of {@link breakerMachine}. Every time is epoch ms on the caller's clock.
 * - `CALL_*`: outcome of an ordinary call; counted only in CLOSED, and only transient fault kinds.
 * - `PROBE_STARTED`: accepted only in HALF-OPEN with no probe in flight (`snapshot.can(...)` tells);
 *   `PROBE_SUCCEEDED` / `PROBE_FAILED` count only while a probe is in flight, so a stale result from an
 *   earlier half-open period changes nothing.
 * - `PROBE_ABANDONED`: the probe in flight ended without hearing from the endpoint (its token was withdrawn,
 *   its process lost the pool's probe claim, the caller aborted it): HALF-OPEN wants another, and nothing is
 *   counted (an abandoned probe says nothing about the endpoint, so it must not lengthen the next cooldown).
 * - `TICK`: moves OPEN to HALF-OPEN once `at >= openUntil` (for restored actors); prunes the window in CLOSED.
 * - `FORCE_OPEN`: opens until the absolute instant `untilMs` (epoch ms, not a duration), e.g. credit
 *   exhaustion; while already open it only ever extends the cooldown.
 * - `RESET`: back to CLOSED with a clean window.
 */
export type BreakerEvent =
  | {
      readonly type: 'CALL_SUCCEEDED';
      readonly at: number;
      /** Successes in the bucket of `at` reported at once (its owner batches them); default 1. */
      readonly count?: number;
    }
  | {
      readonly type: 'CALL_FAILED';
      readonly at: number;
      readonly kind: FaultKind;
      readonly retryAfterMs?: number;
      /** The call stalled: cut by its own deadline with no response, or its body stopped (see `openOnStall`). */
      readonly stall?: boolean;
    }
  | { readonly type: 'PROBE_STARTED'; readonly at: number }
  | { readonly type: 'PROBE_SUCCEEDED'; readonly at: number }
  | {
      readonly type: 'PROBE_FAILED';
      readonly at: number;
      readonly retryAfterMs?: number;
      /**
       * The probe was answered with a rate limit (429): the endpoint is alive and only said when to come back, so
       * the circuit reopens for that Retry-After alone, and the failed-probe doubling does not count it.
       */
      readonly rateLimited?: boolean;
    }
  | { readonly type: 'PROBE_ABANDONED'; readonly at: number }
  | { readonly type: 'TICK'; readonly at: number }
  | {
      readonly type: 'FORCE_OPEN';
      readonly at: number;
      readonly untilMs: number;
      /**
       * Failed probes counted elsewhere (another process of a shared pool probed and failed): the larger count is
       * kept, so the next failed probe here backs off as if this breaker had seen them.
       */
      readonly failedProbes?: number;
    }
  | { readonly type: 'RESET' };

function initialContext(config: BreakerConfig, openCount = 0): BreakerContext {
  return {
    config,
    outcomes: [],
    consecutive: 0,
    openedAt: null,
    openUntil: null,
    openReason: null,
    lastFault: null,
    goodProbes: 0,
    probeInFlight: false,
    openCount,
    failedProbes: 0,
    limitedProbes: 0,
  };
}

/**
 * The shortest reopening after a probe answered with a 429, doubled for each such probe in a row (up to `openMs`): a
 * provider that keeps saying "retry after 0" must not be probed in a tight loop (one was probed 46 times a second, and
 * on a virtual clock the run never ended).
 */
export const MIN_REPROBE_MS = 1_000;

type CallEvent = Extract<BreakerEvent, { type: 'CALL_SUCCEEDED' | 'CALL_FAILED' }>;

/** Whether the breaker counts this call at all (successes, and transient faults only). */
function counts(event: CallEvent): boolean {
  return event.type === 'CALL_SUCCEEDED' || isTransientFault(event.kind);
}

/** The window and streak after recording `event`. Pure, so guards and actions agree. */
function afterCall(
  context: BreakerContext,
  event: CallEvent,
): Pick<BreakerContext, 'outcomes' | 'consecutive'> {
  const { windowMs, consecutiveKinds } = context.config;
  const failed = event.type === 'CALL_FAILED';
  const outcomes = recordOutcome(
    context.outcomes,
    event.at,
    failed,
    windowMs,
    event.type === 'CALL_SUCCEEDED' ? (event.count ?? 1) : 1,
  );
  // A transient fault outside `consecutiveKinds` (a 500 between two 429s) neither counts nor breaks
  // the streak: the endpoint is still failing, so it must not delay opening.
  let consecutive = context.consecutive;
  if (!failed) consecutive = 0;
  else if (consecutiveKinds.includes(event.kind)) consecutive += 1;
  return { outcomes, consecutive };
}

/** Which rule, if any, trips the breaker after `event`. */
function tripReason(context: BreakerContext, event: CallEvent): BreakerOpenReason | null {
  if (!counts(event)) return null;
  const { outcomes, consecutive } = afterCall(context, event);
  const { config } = context;
  if (event.type === 'CALL_FAILED' && event.stall === true && config.openOnStall) return 'stalled';
  if (consecutive >= config.consecutiveToOpen) return 'consecutive';
  // Evaluated after successes too (as resilience4j does): 2 failures + 3 successes is 40 % of 5 calls.
  const { calls, failures } = outcomeTotals(outcomes, event.at, config.windowMs);
  if (calls >= config.minCallsInWindow && failures / calls > config.failureRateThreshold)
    return 'failure_rate';
  return null;
}

function cooldownEnd(
  context: BreakerContext,
  at: number,
  retryAfterMs: number | undefined,
  failedProbes = 0,
  stalled = false,
): number {
  // A stall's shorter cooldown applies to the opening only: a failed probe after it reopens for `openMs` (doubling).
  const { stallOpenMs } = context.config;
  const openMs = stalled ? Math.min(stallOpenMs, context.config.openMs) : context.config.openMs;
  const maxOpenMs = Math.max(openMs, context.config.maxOpenMs ?? openMs);
  const minimum = Math.min(openMs * 2 ** Math.max(0, failedProbes - 1), maxOpenMs);
  return at + Math.max(minimum, retryAfterMs ?? 0);
}

/**
 * The circuit breaker of one endpoint. Input: {@link BreakerInput} (all optional).
 *
 * @example
 * ```ts
 * const breaker = createActor(breakerMachine, { input: { openMs: 30_000 } }).start();
 * for (let i = 0; i < 3; i++) breaker.send({ type: 'CALL_FAILED', at: now, kind: 'rate_limited' });
 * breaker.getSnapshot().value; // 'open'
 * breaker.send({ type: 'TICK', at: breaker.getSnapshot().context.openUntil! }); // the owner's timer
 * breaker.getSnapshot().value; // 'halfOpen'
 * ```
 */
export const breakerMachine = setup({
  types: {} as {
    context: BreakerContext;
    events: BreakerEvent;
    // XState drops `| undefined` from an inferred input type, so callers pass `input: {}` for all defaults.
    input: BreakerInput;
  },
  guards: {
    callTrips: ({ context, event }) =>
      (event.type === 'CALL_SUCCEEDED' || event.type === 'CALL_FAILED') &&
      tripReason(context, event) !== null,
    callCounts: ({ event }) =>
      (event.type === 'CALL_SUCCEEDED' || event.type === 'CALL_FAILED') && counts(event),
    cooldownOver: ({ context, event }) =>
      event.type === 'TICK' && context.openUntil !== null && event.at >= context.openUntil,
    noProbeInFlight: ({ context }) => !context.probeInFlight,
    probeInFlight: ({ context }) => context.probeInFlight,
    probeCloses: ({ context }) =>
      context.probeInFlight && context.goodProbes + 1 >= context.config.probesToClose,
  },
  actions: {
    recordCall: assign(({ context, event }) =>
      event.type === 'CALL_SUCCEEDED' || event.type === 'CALL_FAILED' ? afterCall(context, event) : {},
    ),
    tripOpen: assign(({ context, event }) => {
      if (event.type !== 'CALL_SUCCEEDED' && event.type !== 'CALL_FAILED') return {};
      // Runs before recordCall in the same transition, so it sees the window without this call.
      const reason = tripReason(context, event);
      const retryAfterMs = event.type === 'CALL_FAILED' ? event.retryAfterMs : undefined;
      return {
        openedAt: event.at,
        openUntil: cooldownEnd(context, event.at, retryAfterMs, 0, reason === 'stalled'),
        openReason: reason,
        lastFault: event.type === 'CALL_FAILED' ? event.kind : null,
        goodProbes: 0,
        probeInFlight: false,
        openCount: context.openCount + 1,
      };
    }),
    pruneWindow: assign(({ context, event }) =>
      event.type === 'TICK'
        ? { outcomes: pruneOutcomes(context.outcomes, event.at, context.config.windowMs) }
        : {},
    ),
    resetProbes: assign({ goodProbes: 0, probeInFlight: false }),
    startProbe: assign({ probeInFlight: true }),
    abandonProbe: assign({ probeInFlight: false }),
    countGoodProbe: assign(({ context }) => ({ goodProbes: context.goodProbes + 1, probeInFlight: false })),
    closeCircuit: assign(({ context }) => initialContext(context.config, context.openCount)),
    reopen: assign(({ context, event }) => {
      if (event.type !== 'PROBE_FAILED') return {};
      // A 429 with Retry-After is an answer: waiting out `openMs` (30 s) on it would lock out a chain with nowhere
      // else to go long after the provider said to come back, which is what a stall's short opening exists to avoid.
      const answered = event.rateLimited === true && event.retryAfterMs !== undefined;
      const failedProbes = (context.failedProbes ?? 0) + (answered ? 0 : 1);
      const limitedProbes = (context.limitedProbes ?? 0) + (answered ? 1 : 0);
      const floor = Math.min(MIN_REPROBE_MS * 2 ** (limitedProbes - 1), context.config.openMs);
      return {
        failedProbes,
        limitedProbes,
        openedAt: event.at,
        openUntil: answered
          ? event.at + Math.max(event.retryAfterMs ?? 0, floor)
          : cooldownEnd(context, event.at, event.retryAfterMs, failedProbes),
        openReason: 'probe_failed' as const,
        goodProbes: 0,
        probeInFlight: false,
        openCount: context.openCount + 1,
      };
    }),
    forceOpen: assign(({ context, event }, params: { extend: boolean }) => {
      if (event.type !== 'FORCE_OPEN') return {};
      // Re-forcing while open never shortens a cooldown that is already longer.
      const previous = params.extend && context.openUntil !== null ? context.openUntil : event.at;
      return {
        openedAt: event.at,
        openUntil: Math.max(event.untilMs, event.at, previous),
        failedProbes: Math.max(context.failedProbes ?? 0, event.failedProbes ?? 0),
        openReason: 'forced' as const,
        goodProbes: 0,
        probeInFlight: false,
        openCount: params.extend ? context.openCount : context.openCount + 1,
      };
    }),
    reset: assign(({ context }) => initialContext(context.config, context.openCount)),
  },
}).createMachine({
  id: 'breaker',
  context: ({ input }) => initialContext(resolveBreakerConfig(input)),
  initial: 'closed',
  on: {
    RESET: { target: '.closed', actions: 'reset' },
  },
  states: {
    closed: {
      on: {
        CALL_SUCCEEDED: [
          { guard: 'callTrips', target: 'open', actions: ['tripOpen', 'recordCall'] },
          { actions: 'recordCall' },
        ],
        CALL_FAILED: [
          { guard: 'callTrips', target: 'open', actions: ['tripOpen', 'recordCall'] },
          { guard: 'callCounts', actions: 'recordCall' },
        ],
        TICK: { actions: 'pruneWindow' },
        FORCE_OPEN: { target: 'open', actions: { type: 'forceOpen', params: { extend: false } } },
      },
    },
    open: {
      // Calls that were already in flight when the circuit opened report here; they change nothing.
      on: {
        TICK: { guard: 'cooldownOver', target: 'halfOpen' },
        FORCE_OPEN: {
          target: 'open',
          reenter: true,
          actions: { type: 'forceOpen', params: { extend: true } },
        },
      },
    },
    halfOpen: {
      entry: 'resetProbes',
      on: {
        PROBE_STARTED: { guard: 'noProbeInFlight', actions: 'startProbe' },
        PROBE_SUCCEEDED: [
          { guard: 'probeCloses', target: 'closed', actions: 'closeCircuit' },
          { guard: 'probeInFlight', actions: 'countGoodProbe' },
        ],
        PROBE_FAILED: { guard: 'probeInFlight', target: 'open', actions: 'reopen' },
        PROBE_ABANDONED: { guard: 'probeInFlight', actions: 'abandonProbe' },
        FORCE_OPEN: { target: 'open', actions: { type: 'forceOpen', params: { extend: false } } },
      },
    },
  },
});
