import type { BreakerInput } from '../core/breaker-config.ts';
import type { EndpointDescriptor, EngineResult, RateLimitWindow } from '../core/engine-types.ts';
import { type Fault, isStallFault } from '../core/fault.ts';
import { AimdLimiter } from '../resilience/aimd-limiter.ts';
import { backoffDelay } from '../resilience/backoff.ts';
import { TokenBucket } from '../resilience/token-bucket.ts';
import type { TimerEntry, TimerHeap } from '../clock/timer-heap.ts';
import type { Snapshot } from 'xstate';
import { BREAKER_MACHINE_VERSION } from '../../machines/breaker.machine.ts';
import { BreakerCell, type BreakerStep } from './breaker-cell.ts';
import type {
  BreakerState,
  CallSettlement,
  EndpointHealth,
  EndpointHealthExport,
  WaitCause,
} from './endpoint-health-view.ts';
import { pacingTokens } from '../core/token-usage.ts';

export type {
  CallSettlement,
  EndpointHealth,
  EndpointHealthExport,
  WaitCause,
} from './endpoint-health-view.ts';

/** While a breaker waits for its probe (HALF-OPEN, or OPEN past its deadline), callers look again after this long, ms. */
export const HALF_OPEN_RECHECK_MS = 1_000;

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
  readonly #timers: TimerHeap;
  readonly #hooks: EndpointHealthHooks;
  readonly #random: () => number;
  #breaker: BreakerCell;
  readonly #rpm: TokenBucket;
  readonly #tpm: TokenBucket;
  readonly #limiter: AimdLimiter | undefined;
  readonly #maxConcurrency: number | undefined;
  readonly #rpmLimit: number | undefined;
  readonly #tpmLimit: number | undefined;
  #cooldownUntil = 0;
  /** The pool's shared RPM/TPM window (every process's calls) has no room before this (shared coordination). */
  #sharedPaceUntil = 0;
  #disabledUntil = 0;
  #disabledReason: string | undefined;
  #consecutiveFaults = 0;
  #inFlight = 0;
  #probeInFlight = false;
  #tick: TimerEntry | undefined;
  #closed = false;

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
    this.#timers = timers;
    this.#hooks = hooks;
    this.#random = random;
    this.#breaker = new BreakerCell(settings.breaker);
    this.#rpm = new TokenBucket(limits.rpm ? { capacity: limits.rpm } : {});
    this.#tpm = new TokenBucket(limits.tpm ? { capacity: limits.tpm } : {});
    this.#maxConcurrency = limits.maxConcurrency;
    this.#rpmLimit = limits.rpm || undefined;
    this.#tpmLimit = limits.tpm || undefined;
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
    const wait = Math.max(
      this.#rpm.waitTime(1, now),
      this.#tpm.waitTime(tokens, now),
      this.#sharedPaceUntil - now,
    );
    return wait > 0 ? { until: now + wait, cause: 'pacing' } : undefined;
  }

  /**
   * The pool's shared RPM/TPM window (the calls of every process on this quota) has no room before `until`: the
   * endpoint paces until then, as if its own bucket were empty (the scheduler waits or takes the next in the chain).
   */
  paceUntil(until: number): void {
    if (until <= this.#sharedPaceUntil) return;
    this.#sharedPaceUntil = until;
    this.#hooks.onReadinessChange?.(this.id);
  }

  /** The limits a shared window enforces for this endpoint: its configured RPM/TPM, lowered by what headers said. */
  sharedLimits(now: number): { rpm: number | undefined; tpm: number | undefined } {
    const lower = (configured: number | undefined, bucket: TokenBucket) => {
      if (configured === undefined) return undefined;
      const learned = bucket.state(now).capacity;
      return learned !== undefined && learned < configured ? learned : configured;
    };
    return { rpm: lower(this.#rpmLimit, this.#rpm), tpm: lower(this.#tpmLimit, this.#tpm) };
  }

  /** True when a call could go now or after pacing / a free slot only (the chain is not broken). */
  usable(now: number): boolean {
    const r = this.readiness(now, 0);
    return !r || r.cause === 'pacing' || r.cause === 'concurrency';
  }

  /** A call was granted: it takes one request and its estimated tokens, and one slot. */
  take(tokens: number, now: number): void {
    this.#rpm.tryTake(1, now);
    this.#tpm.tryTake(tokens, now);
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
      this.#rpm.refund(1, now);
      this.#tpm.refund(reservedTokens, now);
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
    return !this.#closed && this.#breaker.state === 'halfOpen' && !this.#probeInFlight;
  }

  /** A probe got its token and goes now. */
  startProbe(now: number): void {
    this.#probeInFlight = true;
    this.#inFlight++;
    this.#send({ type: 'PROBE_STARTED', at: now });
  }

  /** How the probe ended: good probes close the breaker (and clear cooldown and disable); a bad one reopens it. */
  settleProbe(outcome: CallSettlement, now: number): void {
    this.#probeInFlight = false;
    this.#inFlight = Math.max(0, this.#inFlight - 1);
    if (outcome.kind === 'success') {
      this.#send({ type: 'PROBE_SUCCEEDED', at: now });
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
      this.#send({ type: 'PROBE_ABANDONED', at: now });
      return;
    }
    const { fault } = outcome;
    if (fault.kind === 'credit_exhausted' || fault.kind === 'auth') {
      this.#send({ type: 'PROBE_FAILED', at: now });
      this.#applyFault(fault, now);
    } else {
      this.#send({
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
      rpm: this.#rpm.state(now),
      tpm: this.#tpm.state(now),
    };
  }

  /** Everything this endpoint's health holds, at `now` (see {@link EndpointHealthExport}). */
  export(now: number): EndpointHealthExport {
    // The breaker's thresholds come from the settings on restore: only its state travels.
    const persisted = this.#breaker.persisted() as { context?: Record<string, unknown> };
    const { config: _config, ...context } = persisted.context ?? {};
    return {
      breakerVersion: BREAKER_MACHINE_VERSION,
      breaker: { ...persisted, context },
      cooldownUntil: this.#cooldownUntil,
      disabledUntil: this.#disabledUntil,
      ...(this.#disabledReason ? { disabledReason: this.#disabledReason } : {}),
      consecutiveFaults: this.#consecutiveFaults,
      rpm: this.#rpm.export(now),
      tpm: this.#tpm.export(now),
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
    if (data.breakerVersion === BREAKER_MACHINE_VERSION && data.breaker) {
      const stored = data.breaker as { context?: Record<string, unknown> };
      const config = this.#breaker.context.config;
      this.#breaker.stop();
      this.#breaker = new BreakerCell(this.#settings.breaker, {
        ...stored,
        context: { ...(stored.context ?? {}), config },
      } as unknown as Snapshot<unknown>);
      const state = this.#breaker.state;
      const { openUntil } = this.#breaker.context;
      if (state === 'open' && openUntil !== null) {
        this.#tick?.cancel();
        this.#tick = this.#timers.schedule(openUntil, () => this.#onTick());
      }
      if (this.wantsProbe()) this.#hooks.onProbeWanted?.(this.id);
    }
    this.#cooldownUntil = data.cooldownUntil;
    this.#disabledUntil = data.disabledUntil;
    this.#disabledReason = data.disabledReason;
    this.#consecutiveFaults = data.consecutiveFaults;
    this.#rpm.restore(data.rpm);
    this.#tpm.restore(data.tpm);
    if (data.aimd !== undefined) this.#limiter?.restoreValue(data.aimd);
    this.#hooks.onReadinessChange?.(this.id);
  }

  /**
   * Health another process saw on this endpoint (shared coordination), with deadlines in this runtime's clock:
   * it only ever makes the endpoint wait longer (the later cooldown and disable win; a breaker OPEN elsewhere
   * opens this one until the same instant). Returns whether anything changed.
   */
  absorbShared(
    facts: {
      cooldownUntil: number;
      disabledUntil: number;
      disabledReason?: string;
      openUntil: number | null;
      /** The sender's failed probes since its breaker last closed: the larger count backs this breaker off too. */
      failedProbes?: number;
      /** The provider's latest count for this key (it counts every process's calls): the buckets follow it. */
      requests?: RateLimitWindow;
      tokens?: RateLimitWindow;
    },
    now: number,
  ): boolean {
    let changed = false;
    // Shared counts only lower availability: a `limit` above the capacity known here is not taken (a wrong or
    // hostile message must not let this process send more than its own headers allow).
    const noRaise = (w: RateLimitWindow, bucket: TokenBucket): RateLimitWindow => {
      const capacity = bucket.state(now).capacity;
      if (w.limit === undefined || capacity === undefined || w.limit <= capacity) return w;
      const { limit: _, ...rest } = w;
      return rest;
    };
    if (facts.requests) {
      this.#rpm.observe(noRaise(lessInFlight(facts.requests, this.#inFlight)!, this.#rpm), now);
      changed = true;
    }
    if (facts.tokens) {
      this.#tpm.observe(noRaise(lessInFlight(facts.tokens, this.#inFlight)!, this.#tpm), now);
      changed = true;
    }
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
      this.#send({
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
    this.#closed = true;
    this.#tick?.cancel();
    this.#breaker.stop();
  }

  #succeeded(r: EngineResult, reservedTokens: number, now: number): void {
    this.#consecutiveFaults = 0;
    // Counted without a machine step while it cannot change the breaker (see BreakerCell.succeeded).
    const step = this.#breaker.succeeded(now);
    if (step) this.#afterStep(step);
    this.#limiter?.release('success');
    // Pacing may estimate: a call whose provider reported no usage is charged breakwater's estimate of it.
    const used = pacingTokens(r.usage);
    if (reservedTokens > used) this.#tpm.refund(reservedTokens - used, now);
    // Other calls granted on this endpoint are in flight and not yet counted in `remaining`.
    const others = this.#inFlight;
    const req = lessInFlight(r.rateLimit.requests, others);
    if (req) this.#rpm.observe(atMost(req, this.#rpmLimit), now);
    const tok = lessInFlight(r.rateLimit.tokens ?? r.rateLimit.inputTokens, others);
    if (tok) this.#tpm.observe(atMost(tok, this.#tpmLimit), now);
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
        this.#send({ type: 'FORCE_OPEN', at: now, untilMs: this.#disabledUntil });
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
        this.#send({
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

  /** Every breaker event goes through here: change hooks, the TICK at `openUntil`, the probe request. */
  #send(event: Parameters<BreakerCell['send']>[0]): void {
    this.#afterStep(this.#breaker.send(event));
  }

  /** What follows a breaker step: the TICK at `openUntil`, change hooks, the probe request. */
  #afterStep(step: BreakerStep): void {
    const { openUntil } = this.#breaker.context;
    if (step.state === 'open' && openUntil !== null && this.#tick?.at !== openUntil) {
      this.#tick?.cancel();
      this.#tick = this.#timers.schedule(openUntil, () => this.#onTick());
    }
    if (step.changed)
      this.#hooks.onBreakerChange?.({
        endpointId: this.id,
        state: step.state,
        previous: step.previous,
        openUntil,
      });
    if (step.changed && this.wantsProbe()) this.#hooks.onProbeWanted?.(this.id);
  }

  #onTick(): void {
    this.#tick = undefined;
    if (this.#closed) return;
    const at = this.#breaker.context.openUntil ?? 0;
    this.#send({ type: 'TICK', at });
  }
}

/** What a call's fault tells the AIMD limiter: the provider said it is full, or something else went wrong. */
function limiterSignal(fault: Fault): 'overload' | 'other' {
  return fault.kind === 'rate_limited' || fault.kind === 'overloaded' ? 'overload' : 'other';
}

/** A rate-limit window with the calls still in flight taken off `remaining` (the provider has not counted them). */
function lessInFlight(w: RateLimitWindow | undefined, inFlight: number): RateLimitWindow | undefined {
  return w && w.remaining !== undefined ? { ...w, remaining: Math.max(0, w.remaining - inFlight) } : w;
}

/**
 * `w` with its limit no higher than the `configured` one: a provider's headers may lower the pace a user set (the key
 * has less room than they thought) but never raise it (their limit may be a budget, or a share of a key used elsewhere).
 */
function atMost(w: RateLimitWindow, configured: number | undefined): RateLimitWindow {
  if (configured === undefined || w.limit === undefined || w.limit <= configured) return w;
  return { ...w, limit: configured };
}
