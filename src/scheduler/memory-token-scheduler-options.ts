import type { Clock } from '../clock/clock.ts';
import type { TimerHeap } from '../clock/timer-heap.ts';
import type { EndpointRegistry } from '../health/endpoint-registry.ts';
import type { RetryBudget } from '../resilience/retry-budget.ts';
import type { CallSettlement } from '../health/endpoint-health-view.ts';
import { LeaseBook } from './lease-book.ts';
import type { Grant, SchedulerReport, TokenRequest } from './token-scheduler.ts';

/** Options of a {@link MemoryTokenScheduler}. */
export interface MemoryTokenSchedulerOptions {
  readonly clock: Clock;
  /** The runtime's one timer heap (lease overruns, endpoint wake-ups). */
  readonly timers: TimerHeap;
  /** Endpoints and their health: which endpoint of a chain may take a call now. */
  readonly endpoints: EndpointRegistry;
  /** Tokens: upstream calls in flight at once. */
  readonly limit: number;
  /** Tiers, highest priority first. A request of an unknown tier is served after every known one. */
  readonly tiers: readonly string[];
  /**
   * Tier aging, ms: a waiting request moves up one tier for every `tierAgingMs` it has waited, so a request of
   * tier k is served before one of tier 0 that arrived more than k × `tierAgingMs` after it (a bound on how long a
   * lower tier starves). Default `Infinity`: strict tier priority, FIFO inside a tier.
   *
   * @example
   * ```ts
   * new MemoryTokenScheduler({ ...options, tiers: ['incident', 'analysis', 'ops'], tierAgingMs: 1_000 });
   * ```
   */
  readonly tierAgingMs?: number;
  /**
   * The `slack` tier policy, ms: a request whose holder's asks left (`TokenRequest.workLeft`) are the critical path
   * of all the work left (run one after another, they would outlast the rest shared over the tokens) goes before
   * higher tiers, but never before a higher-tier request that has waited `tierSlackMs` already. So tokens stay busy
   * to the end of a round of sequential chains, and a higher tier waits at most `tierSlackMs` for a lower one.
   * Default: none (strict tier order, aged by `tierAgingMs`).
   *
   * @example
   * ```ts
   * new MemoryTokenScheduler({ ...options, tiers: ['incident', 'analysis', 'ops'], tierSlackMs: 1_500 });
   * ```
   */
  readonly tierSlackMs?: number;
  /** A grant not released after this long has its signal aborted, ms. */
  readonly leaseMs: number;
  /** After aborting an overrun lease, how long the holder has to give the token back before it is taken, ms. */
  readonly reclaimGraceMs: number;
  /** Retries are charged here when granted; a spent budget denies them. Default: none (retries unlimited). */
  readonly budget?: RetryBudget;
  /** Endpoint ids a request may use, in order. Default: its chain's endpoints. */
  readonly endpointsFor?: (request: TokenRequest) => readonly string[];
  readonly onReport?: (report: SchedulerReport) => void;
  /** A holder ignored its lease's abort for `reclaimGraceMs` and its token was taken back anyway. */
  readonly onForcedReclaim?: (grant: Grant) => void;
}

/** The tier order options checked: aging (Infinity: none) and slack (undefined: strict). */
export function tierOrderOf(options: MemoryTokenSchedulerOptions): {
  readonly agingMs: number;
  readonly slackMs: number | undefined;
} {
  const agingMs = options.tierAgingMs ?? Number.POSITIVE_INFINITY;
  if (!(agingMs > 0))
    throw new RangeError(
      `tierAgingMs ${String(agingMs)}: set a duration > 0 ms, or Infinity for strict tiers`,
    );
  const slackMs = options.tierSlackMs;
  if (slackMs !== undefined && !(slackMs >= 0))
    throw new RangeError(
      `tierSlackMs ${String(slackMs)}: set a duration ≥ 0 ms, or leave it out for strict tiers`,
    );
  return { agingMs, slackMs };
}

/**
 * The scheduler's leases: an overrun lease is reported as reclaimed, and one whose holder ignored the cancellation
 * for `reclaimGraceMs` is released through `release` as a timeout fault of its endpoint.
 */
export function schedulerLeaseBook(
  options: MemoryTokenSchedulerOptions,
  release: (leaseId: string, outcome: CallSettlement) => void,
): LeaseBook {
  return new LeaseBook({
    clock: options.clock,
    timers: options.timers,
    leaseMs: options.leaseMs,
    reclaimGraceMs: options.reclaimGraceMs,
    release,
    onReclaimed: (g, at) =>
      options.onReport?.({
        type: 'token.reclaimed',
        at,
        holder: g.holder,
        endpointId: g.endpointId,
        leaseId: g.leaseId,
      }),
    onCancellationIgnored: (g) => {
      options.onForcedReclaim?.(g);
      const provider = options.endpoints.get(g.endpointId)?.health.descriptor.provider ?? 'openai';
      const message = `the call ignored the cancellation of its overrun lease for ${options.reclaimGraceMs} ms; its token was taken back`;
      release(g.leaseId, {
        kind: 'fault',
        fault: { kind: 'timeout', provider, message, endpointId: g.endpointId },
      });
    },
  });
}
