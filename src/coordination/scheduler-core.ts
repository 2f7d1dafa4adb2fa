import type { Clock } from '../clock/clock.ts';
import type { EndpointRegistry } from '../health/endpoint-registry.ts';
import type { MemoryTokenScheduler } from '../scheduler/memory-token-scheduler.ts';
import type { CoordinationBackend } from './coordination-backend.ts';
import type { Pending } from './pending-request.ts';

/**
 * What the parts of a CoordinatedTokenScheduler (its drain, lease book, probe claims) share with it: its options
 * resolved once, the transitions of its phase (scheduler-phase.ts), and the ends of a pending request. The
 * scheduler makes it; the parts call it and keep nothing of their own about the phase.
 */
export interface SchedulerCore {
  /** This process's own scheduler: tiers, endpoint choice, pacing, retry budget. */
  readonly local: MemoryTokenScheduler;
  readonly backend: CoordinationBackend;
  readonly endpoints: EndpointRegistry;
  /** The runtime's clock (endpoint readiness, decision times). */
  readonly clock: Clock;
  readonly leaseTtlMs: number;
  /** Real time, ms: lease deadlines are real time whatever the runtime's clock. */
  readonly now: () => number;
  /** Runtime-clock ms per real ms (shared RPM/TPM windows and max waits are turned into real time with it). */
  readonly scale: number;
  /** Whether `close()` was called (the phase is `closed`). */
  closed(): boolean;
  /** The connection every grant waits for: asked for once, kept by the phase. */
  connect(): Promise<void>;
  /** A backend call failed: the phase goes down (said once). */
  failed(e: unknown): void;
  /** A backend call answered: the phase is up again (said once) if it was down. */
  answered(): void;
  /** The kept connection failed: dropped, so the next ask connects again. */
  dropConnection(): void;
  /** Asks the local scheduler; a local grant then queues for a global token. */
  submit(p: Pending): void;
  /** Settles p with `reason` (rejected) and gives back what it holds. */
  withdraw(p: Pending, reason: unknown): void;
  /** Settles p as denied (a probe: rejected) and gives back what it holds. */
  deny(p: Pending, e: unknown): void;
}
