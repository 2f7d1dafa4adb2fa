import type { BreakerInput } from '../core/breaker-config.ts';
import type { RateLimitWindow } from '../core/engine-types.ts';
import type { Fault } from '../core/fault.ts';
import type { BreakerState, WaitCause } from './endpoint-health-view.ts';

/*
 * What an endpoint's health is built from (the runtime's settings, the endpoint's own limits, its owner's hooks)
 * and what it answers: the types of `EndpointHealthTracker`, apart from the class.
 */

/** When an endpoint can take a call, if not now. */
export interface Readiness {
  readonly until: number;
  readonly cause: WaitCause;
  /**
   * The breaker waits for its probe: `until` is only when to look again, not when it will be ready. A caller may
   * wait for the probe's outcome (its close is announced) as long as its own max wait allows.
   */
  readonly probing?: true;
}

/** The runtime-wide settings every endpoint's health follows. */
export interface HealthSettings {
  readonly breaker: BreakerInput;
  /** First backoff step when the provider gave no Retry-After, ms. */
  readonly baseBackoffMs: number;
  /** Largest backoff step, ms. */
  readonly maxBackoffMs: number;
  /** How long a key without credit (or refused) stays disabled when the fault does not say, ms. */
  readonly creditCooldownMs: number;
  /** AIMD per endpoint. */
  readonly adaptive: boolean;
  /** Upper bound of an endpoint's adaptive concurrency when it sets none (the global limit). */
  readonly defaultConcurrency: number;
}

/** What an endpoint's health tells its owner. Every hook is optional. */
export interface EndpointHealthHooks {
  readonly onBreakerChange?: (change: {
    endpointId: string;
    state: BreakerState;
    previous: BreakerState;
    openUntil: number | null;
  }) => void;
  /** The breaker is HALF-OPEN and no probe is in flight: someone should send one. */
  readonly onProbeWanted?: (endpointId: string) => void;
  /** The endpoint may be ready sooner than it last said (a probe closed it, room came back): wake its waiters. */
  readonly onReadinessChange?: (endpointId: string) => void;
  /** A fault was recorded (after the health is updated). */
  readonly onFault?: (endpointId: string, fault: Fault) => void;
  /** A response's rate-limit headers corrected the buckets (other processes on the same key may want them). */
  readonly onRateLimit?: (
    endpointId: string,
    windows: { requests?: RateLimitWindow; tokens?: RateLimitWindow },
  ) => void;
}

/** The endpoint's own limits from its config. */
export interface EndpointLimits {
  readonly rpm?: number;
  readonly tpm?: number;
  readonly maxConcurrency?: number;
}

/**
 * Health another process saw on an endpoint (shared coordination), with deadlines in this runtime's clock (see
 * `EndpointHealthTracker.absorbShared`).
 */
export interface SharedHealthFacts {
  cooldownUntil: number;
  disabledUntil: number;
  disabledReason?: string;
  openUntil: number | null;
  /** The sender's failed probes since its breaker last closed: the larger count backs this breaker off too. */
  failedProbes?: number;
  /** The provider's latest count for this key (it counts every process's calls): the buckets follow it. */
  requests?: RateLimitWindow;
  tokens?: RateLimitWindow;
}
