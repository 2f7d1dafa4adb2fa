import { SmoothedMean } from '../resilience/smoothed-mean.ts';
import type { EndpointDescriptor, EngineResult } from '../core/engine-types.ts';
import { type Fault, isStallFault } from '../core/fault.ts';
import { AimdLimiter } from '../resilience/aimd-limiter.ts';
import { backoffDelay } from '../resilience/backoff.ts';
import type { TimerHeap } from '../clock/timer-heap.ts';
import { BREAKER_MACHINE_VERSION } from '../../machines/breaker.machine.ts';
import { BreakerDriver } from './breaker-driver.ts';
import type {
  EndpointHealthHooks,
  EndpointLimits,
  HealthSettings,
  Readiness,
  SharedHealthFacts,
} from './endpoint-health-types.ts';
import type {
  BreakerState,
  CallSettlement,
  EndpointHealth,
  EndpointHealthExport,
} from './endpoint-health-view.ts';
import { EndpointPace, lessInFlight } from './endpoint-pace.ts';
import { pacingTokens } from '../core/token-usage.ts';

export type {
  CallSettlement,
  EndpointHealth,
  EndpointHealthExport,
  WaitCause,
} from './endpoint-health-view.ts';

/** While a breaker waits for its probe (HALF-OPEN, or OPEN past its deadline), callers look again after this long, ms. */
export const HALF_OPEN_RECHECK_MS = 1_000;

/**
 * The one owner of an endpoint's health (provider + key + model): its circuit breaker, its cooldown after a
 * fault (Retry-After honoured, else jittered backoff), its disable after credit exhaustion or a refused key,
 * its RPM/TPM buckets corrected from the rate-limit headers, its AIMD concurrency, its calls in flight and its
 * HALF-OPEN probes. Every rule about "may this endpoint be called now?" lives here; time comes from the `now`
 * each method is given and from the shared {@link TimerHeap}, never from anywhere else.
 *
 * @example
 * ```ts
 * const health = new EndpointHealthTracker('mini', descriptor, {}, settings, timers, hooks);
 * if (!health.readiness(now, 900)) health.take(900, now);
 * health.settle({ kind: 'fault', fault }, 900, clock.now()); // a 429: cooldown, breaker, AIMD
 * ```
 */
export class EndpointHealthTracker {
  readonly id: string;
  readonly descriptor: EndpointDescriptor;
  readonly #settings: HealthSettings;
  readonly #hooks: EndpointHealthHooks;
  readonly #random: () => number;
  /** Its circuit breaker, the TICK at its deadline, its probe in flight. */
  readonly #breaker: BreakerDriver;
  /** Its RPM/TPM buckets and the pool's shared window. */
  readonly #pace: EndpointPace;
  readonly #limiter: AimdLimiter | undefined;
  readonly #maxConcurrency: number | undefined;
  #cooldownUntil = 0;
  #disabledUntil = 0;
  #disabledReason: string | undefined;
  #consecutiveFaults = 0;
  /** The usual latency of its successful calls, ms (smoothed; wait-or-switch weighs it). */
  readonly latency = new SmoothedMean(0.2);
  #inFlight = 0;

  constructor(
    id: string,
    descriptor: EndpointDescriptor,
    limits: EndpointLimits,
    settings: HealthSettings,
    timers: TimerHeap,
    hooks: EndpointHealthHooks = {},
    random: () => number = Math.random,
  ) {
    this.id = id;
    this.descriptor = descriptor;
    this.#settings = settings;
    this.#hooks = hooks;
    this.#random = random;
    this.#breaker = new BreakerDriver(id, settings.breaker, timers, hooks);
    this.#pace = new EndpointPace(limits);
    this.#maxConcurrency = limits.maxConcurrency;
    this.#limiter = settings.adaptive
      ? new AimdLimiter({ max: limits.maxConcurrency ?? settings.defaultConcurrency })
      : undefined;
  }

  get breakerState(): BreakerState {
    return this.#breaker.state;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * `undefined` when a call of about `tokens` tokens may go now; else when it may go and why. A pure read:
   * it never moves the breaker (only its TICK at `openUntil` does).
   */
  readiness(now: number, tokens: number): Readiness | undefined {
    if (this.#disabledUntil > now) return { until: this.#disabledUntil, cause: 'disabled' };
    const state = this.#breaker.state;
    if (state === 'open') {
      const openUntil = this.#breaker.context.openUntil ?? now;
      // Past the deadline but before its TICK ran: the probe comes first, so callers look again shortly.
      return openUntil > now
        ? { until: openUntil, cause: 'open' }
        : { until: now + HALF_OPEN_RECHECK_MS, cause: 'open', probing: true };
    }
    if (state === 'halfOpen') return { until: now + HALF_OPEN_RECHECK_MS, cause: 'open', probing: true };
    if (this.#cooldownUntil > now) return { until: this.#cooldownUntil, cause: 'cooldown' };
    if (this.#maxConcurrency !== undefined && this.#inFlight >= this.#maxConcurrency)
      return { until: now, cause: 'concurrency' };
    if (this.#limiter && this.#inFlight >= this.#limiter.limit) return { until: now, cause: 'concurrency' };
    const wait = this.#pace.waitMs(tokens, now);
    return wait > 0 ? { until: now + wait, cause: 'pacing' } : undefined;
  }

  /**
   * The pool's shared RPM/TPM window (the calls of every process on this quota) has no room before `until`: the
   * endpoint paces until then, as if its own bucket were empty (the scheduler waits or takes the next in the chain).
   */
  paceUntil(until: number): void {
    if (this.#pace.paceUntil(until)) this.#hooks.onReadinessChange?.(this.id);
  }

  /** The limits a shared window enforces for this endpoint: its configured RPM/TPM, lowered by what headers said. */
  sharedLimits(now: number): { rpm: number | undefined; tpm: number | undefined } {
    return this.#pace.sharedLimits(now);
  }

  /** True when a call could go now or after pacing / a free slot only (the chain is not broken). */
  usable(now: number): boolean {
    const r = this.readiness(now, 0);
    return !r || r.cause === 'pacing' || r.cause === 'concurrency';
  }

  /** A call was granted: it takes one request and its estimated tokens, and one slot. */
  take(tokens: number, now: number): void {
    this.#pace.take(tokens, now);
    this.#limiter?.tryAcquire();
    this.#inFlight++;
  }

  /**
   * A granted call ended. Success: breaker success, AIMD growth, TPM refund of the unused estimate, buckets
   * corrected from the response headers. Fault: cooldown, breaker, AIMD decrease, or a disable (credit, auth).
   */
  settle(outcome: CallSettlement, reservedTokens: number, now: number): void {
    this.#inFlight = Math.max(0, this.#inFlight - 1);
    if (outcome.kind === 'unused') {
      this.#pace.refund(reservedTokens, now);
      this.#limiter?.release('other');
      this.#hooks.onReadinessChange?.(this.id);
      return;
    }
    if (outcome.kind === 'success') {
      this.#succeeded(outcome.result, reservedTokens, now);
      this.#hooks.onReadinessChange?.(this.id);
      return;
    }
    if (outcome.noted) this.#limiter?.release(limiterSignal(outcome.fault));
    else {
      this.#applyFault(outcome.fault, now);
      this.#limiter?.release(limiterSignal(outcome.fault));
    }
    this.#hooks.onReadinessChange?.(this.id);
    if (!outcome.noted) this.#hooks.onFault?.(this.id, outcome.fault);
  }

  /**
   * Records a call's fault now, before its slot is freed ({@link EndpointHealthTracker.settle} with `noted` frees
   * it later). A call we cut (a stall, a cancellation) keeps its slot a moment for its connection to go, but the
   * retry its agent asks for at once must already see this endpoint cooling or open, or it is sent straight back
   * to the endpoint that just stalled.
   */
  noteFault(fault: Fault, now: number): void {
    this.#applyFault(fault, now);
    this.#hooks.onReadinessChange?.(this.id);
    this.#hooks.onFault?.(this.id, fault);
  }

  /** The breaker is HALF-OPEN with no probe in flight. */
  wantsProbe(): boolean {
    return this.#breaker.wantsProbe();
  }

  /** A probe got its token and goes now. */
  startProbe(now: number): void {
    this.#inFlight++;
    this.#breaker.probeStarted(now);
  }

  /** How the probe ended: good probes close the breaker (and clear cooldown and disable); a bad one reopens it. */
  settleProbe(outcome: CallSettlement, now: number): void {
    this.#breaker.probeEnded();
    this.#inFlight = Math.max(0, this.#inFlight - 1);
    if (outcome.kind === 'success') {
      this.#breaker.send({ type: 'PROBE_SUCCEEDED', at: now });
      if (this.#breaker.state === 'closed') {
        this.#disabledUntil = 0;
        this.#disabledReason = undefined;
        this.#cooldownUntil = 0;
        this.#consecutiveFaults = 0;
        this.#hooks.onReadinessChange?.(this.id);
      } else if (this.wantsProbe()) this.#hooks.onProbeWanted?.(this.id);
      return;
    }
    if (outcome.kind === 'unused') {
      // Abandoned: the probe never went, or its runner stopped it (its lease fenced, the pool's probe claim lost, the
      // runtime stopping; see probe-runner.ts). Nothing was learned of the endpoint, and HALF-OPEN still wants one.
      this.#breaker.send({ type: 'PROBE_ABANDONED', at: now });
      return;
    }
    const { fault } = outcome;
    if (fault.kind === 'credit_exhausted' || fault.kind === 'auth') {
      this.#breaker.send({ type: 'PROBE_FAILED', at: now });
      this.#applyFault(fault, now);
    } else {
      this.#breaker.send({
        type: 'PROBE_FAILED',
        at: now,
        ...(fault.retryAfterMs !== undefined ? { retryAfterMs: fault.retryAfterMs } : {}),
        ...(fault.kind === 'rate_limited' ? { rateLimited: true } : {}),
      });
    }
    this.#hooks.onFault?.(this.id, fault);
  }

  /** Plain-data view at `now`. */
  view(now: number): EndpointHealth {
    const limit = this.#limiter?.limit ?? this.#maxConcurrency;
    return {
      id: this.id,
      descriptor: this.descriptor,
      breaker: this.#breaker.state,
      openUntil: this.#breaker.context.openUntil,
      ...(this.#breaker.context.failedProbes ? { failedProbes: this.#breaker.context.failedProbes } : {}),
      cooldownUntil: this.#cooldownUntil,
      disabledUntil: this.#disabledUntil,
      ...(this.#disabledReason ? { disabledReason: this.#disabledReason } : {}),
      inFlight: this.#inFlight,
      ...(limit !== undefined ? { concurrencyLimit: limit } : {}),
      rpm: this.#pace.rpm.state(now),
      tpm: this.#pace.tpm.state(now),
    };
  }

  /** Everything this endpoint's health holds, at `now` (see {@link EndpointHealthExport}). */
  export(now: number): EndpointHealthExport {
    return {
      breakerVersion: BREAKER_MACHINE_VERSION,
      breaker: this.#breaker.exported(),
      cooldownUntil: this.#cooldownUntil,
      disabledUntil: this.#disabledUntil,
      ...(this.#disabledReason ? { disabledReason: this.#disabledReason } : {}),
      consecutiveFaults: this.#consecutiveFaults,
      rpm: this.#pace.rpm.export(now),
      tpm: this.#pace.tpm.export(now),
      ...(this.#limiter ? { aimd: this.#limiter.state().value } : {}),
      exportedAt: now,
    };
  }

  /**
   * Puts back what {@link EndpointHealthTracker.export} gave (a resumed run, before any call): the breaker in its
   * state with its deadline re-armed on the timer heap (a deadline already past moves it on at once), the
   * cooldown, the disable and its reason, the buckets' units, the AIMD limit. Calls in flight are not restored:
   * none survive a process.
   */
  restore(data: EndpointHealthExport): void {
    if (data.breakerVersion === BREAKER_MACHINE_VERSION && data.breaker) this.#breaker.restore(data.breaker);
    this.#cooldownUntil = data.cooldownUntil;
    this.#disabledUntil = data.disabledUntil;
    this.#disabledReason = data.disabledReason;
    this.#consecutiveFaults = data.consecutiveFaults;
    this.#pace.rpm.restore(data.rpm);
    this.#pace.tpm.restore(data.tpm);
    if (data.aimd !== undefined) this.#limiter?.restoreValue(data.aimd);
    this.#hooks.onReadinessChange?.(this.id);
  }

  /**
   * Health another process saw on this endpoint (shared coordination), with deadlines in this runtime's clock:
   * it only ever makes the endpoint wait longer (the later cooldown and disable win; a breaker OPEN elsewhere
   * opens this one until the same instant). Returns whether anything changed.
   */
  absorbShared(facts: SharedHealthFacts, now: number): boolean {
    let changed = this.#pace.absorbShared(facts.requests, facts.tokens, this.#inFlight, now);
    if (facts.cooldownUntil > this.#cooldownUntil && facts.cooldownUntil > now) {
      this.#cooldownUntil = facts.cooldownUntil;
      changed = true;
    }
    if (facts.disabledUntil > this.#disabledUntil && facts.disabledUntil > now) {
      this.#disabledUntil = facts.disabledUntil;
      this.#disabledReason = facts.disabledReason ?? this.#disabledReason ?? 'disabled by another process';
      changed = true;
    }
    const open = facts.openUntil;
    const failedProbes = facts.failedProbes ?? 0;
    if (
      open !== null &&
      open > now &&
      (this.#breaker.state !== 'open' ||
        (this.#breaker.context.openUntil ?? 0) < open ||
        (this.#breaker.context.failedProbes ?? 0) < failedProbes)
    ) {
      this.#breaker.send({
        type: 'FORCE_OPEN',
        at: now,
        untilMs: open,
        ...(failedProbes > 0 ? { failedProbes } : {}),
      });
      changed = true;
    }
    if (changed) this.#hooks.onReadinessChange?.(this.id);
    return changed;
  }

  /** The endpoint is gone (a BYOK key expired, the runtime stopped): its timer is dropped, it wants no probes. */
  close(): void {
    this.#breaker.close();
  }

  #succeeded(r: EngineResult, reservedTokens: number, now: number): void {
    this.#consecutiveFaults = 0;
    this.latency.add(r.latencyMs);
    // Counted without a machine step while it cannot change the breaker (see BreakerCell.succeeded).
    this.#breaker.succeeded(now);
    this.#limiter?.release('success');
    // Pacing may estimate: a call whose provider reported no usage is charged breakwater's estimate of it.
    const used = pacingTokens(r.usage);
    if (reservedTokens > used) this.#pace.refundTokens(reservedTokens - used, now);
    // Other calls granted on this endpoint are in flight and not yet counted in `remaining`.
    const others = this.#inFlight;
    const req = lessInFlight(r.rateLimit.requests, others);
    const tok = lessInFlight(r.rateLimit.tokens ?? r.rateLimit.inputTokens, others);
    this.#pace.observe(req, tok, now);
    if ((req || tok) && this.#hooks.onRateLimit)
      this.#hooks.onRateLimit(this.id, {
        ...(req ? { requests: req } : {}),
        ...(tok ? { tokens: tok } : {}),
      });
  }

  #applyFault(fault: Fault, now: number): void {
    switch (fault.kind) {
      case 'credit_exhausted':
      case 'auth': {
        // The key is gone until a human acts (or the provider's quota window resets): never retried like a 429.
        const { disableForMs } = fault;
        const forMs =
          disableForMs !== undefined && disableForMs > 0 ? disableForMs : this.#settings.creditCooldownMs;
        const until = now + forMs;
        this.#disabledUntil = Math.max(this.#disabledUntil, until);
        // A provider's own window says why (a per-day quota until its reset); the views show it as the reason.
        this.#disabledReason =
          fault.kind === 'auth' ? 'key refused (auth)' : (fault.disableReason ?? 'credit exhausted');
        this.#breaker.send({ type: 'FORCE_OPEN', at: now, untilMs: this.#disabledUntil });
        return;
      }
      case 'rate_limited':
      case 'overloaded':
      case 'server_error':
      case 'network':
      case 'timeout': {
        const step = backoffDelay(this.#consecutiveFaults, {
          baseMs: this.#settings.baseBackoffMs,
          maxMs: this.#settings.maxBackoffMs,
          random: this.#random,
        });
        this.#consecutiveFaults++;
        const wait = fault.retryAfterMs !== undefined ? Math.max(fault.retryAfterMs, 0) : step;
        this.#cooldownUntil = Math.max(this.#cooldownUntil, now + wait);
        // A stall opens the breaker at once (`openOnStall`): out of rotation until a probe finds it answering.
        this.#breaker.send({
          type: 'CALL_FAILED',
          at: now,
          kind: fault.kind,
          ...(fault.retryAfterMs !== undefined ? { retryAfterMs: fault.retryAfterMs } : {}),
          ...(isStallFault(fault) ? { stall: true } : {}),
        });
        return;
      }
      default:
      // A request too large for this endpoint, a bad request, a cancellation: nothing about its health.
    }
  }
}

/** What a call's fault tells the AIMD limiter: the provider said it is full, or something else went wrong. */
function limiterSignal(fault: Fault): 'overload' | 'other' {
  return fault.kind === 'rate_limited' || fault.kind === 'overloaded' ? 'overload' : 'other';
}
