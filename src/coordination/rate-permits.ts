import type { Grant } from '../scheduler/token-scheduler.ts';
import type { RateAsk } from './coordination-backend.ts';
import { RATE_SLOTS } from './coordination-backend.ts';
import type { SchedulerCore } from './scheduler-core.ts';

/** The minute of an endpoint's RPM/TPM limits, on the runtime's clock. */
const LIMIT_WINDOW_MS = 60_000;
/**
 * The shortest time a shared-window permit covers its call, real ms. A permit is good for one slot of its window
 * (1/60): at `timeScale` 150 that is 6.7 real ms, less than one statement's round trip on a loaded PostgreSQL, so
 * nearly every grant came back "too late" and was asked again until the turn degraded (a one-process run, whose
 * buckets are taken at grant time, never refuses a grant for its age). Below this floor the pool's count may miss
 * a call the provider counts in its next window: that call gets a 429, handled like any.
 */
const MIN_PERMIT_MS = 100;

/** What the grant's call takes from its endpoint's shared RPM/TPM window; undefined if it has no limits. */
export function rateAsk(
  core: Pick<SchedulerCore, 'endpoints' | 'clock' | 'scale'>,
  grant: Grant,
): RateAsk | undefined {
  const health = core.endpoints.get(grant.endpointId)?.health;
  if (!health) return undefined;
  const { rpm, tpm } = health.sharedLimits(core.clock.now());
  if (rpm === undefined && tpm === undefined) return undefined;
  return {
    key: grant.endpointId,
    windowMs: LIMIT_WINDOW_MS / core.scale,
    rpm,
    tpm,
    tokens: grant.estimatedTokens,
  };
}

/**
 * Real time after which a permit asked for at `now` no longer covers its call (see `Held.permitDeadline`): one slot
 * of its window, and at least {@link MIN_PERMIT_MS}.
 */
export function permitDeadlineFrom(now: number, ask: RateAsk): number {
  return now + Math.max(ask.windowMs / RATE_SLOTS, MIN_PERMIT_MS);
}
