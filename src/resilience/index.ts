/**
 * The leaf resilience mechanisms: pure, clock-injected (every method takes `now`), composed by the
 * token scheduler and endpoint health. The circuit breaker itself is `machines/breaker.machine.ts`.
 */
export {
  type AimdLimiterOptions,
  type AimdLimiterState,
  type AimdOutcome,
  AimdLimiter,
} from './aimd-limiter.ts';
export { type BackoffOptions, backoffDelay, retryDelay } from './backoff.ts';
export {
  type OutcomeBucket,
  type OutcomeTotals,
  outcomeTotals,
  pruneOutcomes,
  recordOutcome,
} from './outcome-window.ts';
export { type RetryBudgetOptions, type RetryBudgetState, RetryBudget } from './retry-budget.ts';
export { type TokenBucketOptions, type TokenBucketState, TokenBucket } from './token-bucket.ts';
export {
  BREAKER_MACHINE_VERSION,
  type BreakerConfig,
  type BreakerContext,
  type BreakerEvent,
  type BreakerInput,
  type BreakerOpenReason,
  breakerMachine,
  DEFAULT_BREAKER_CONFIG,
  resolveBreakerConfig,
} from '../../machines/breaker.machine.ts';
