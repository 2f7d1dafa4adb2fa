import type { Clock } from '../clock/clock.ts';
import type { TimerHeap } from '../clock/timer-heap.ts';
import type { EndpointRegistry } from '../health/endpoint-registry.ts';
import type { RetryBudget } from '../resilience/retry-budget.ts';
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
