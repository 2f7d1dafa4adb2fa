import { type Actor, type InspectionEvent, createActor } from 'xstate';
import { breakerMachine } from '../../machines/breaker.machine.ts';
import type { Clock } from '../clock/clock.ts';
import type { ParsedEndpointConfig } from '../engines/endpoint-config.ts';
import { describeEndpoint } from '../engines/endpoint-config.ts';
import type { Engine, EndpointDescriptor, EngineResult, RateLimitWindow } from '../engines/engine-types.ts';
import type { Fault } from '../faults/fault.ts';
import { AimdLimiter } from '../resilience/aimd-limiter.ts';
import { backoffDelay } from '../resilience/backoff.ts';
import { TokenBucket } from '../resilience/token-bucket.ts';
import type { RuntimeConfig } from './runtime-config.ts';

/** When every endpoint of a chain is HALF-OPEN (probing), callers look again after this long, ms. */
const HALF_OPEN_RECHECK_MS = 1_000;

/** Why an endpoint cannot take a call right now. */
export type WaitCause = 'pacing' | 'concurrency' | 'cooldown' | 'open' | 'disabled';

/** The pool's answer to "which endpoint of this chain may I call now?". */
export type Selection =
  | { readonly kind: 'ready'; readonly endpointId: string; readonly index: number }
  | {
      readonly kind: 'wait';
      readonly endpointId: string;
      readonly index: number;
      readonly until: number;
      readonly cause: WaitCause;
    }
  | { readonly kind: 'none'; readonly reason: string };

/** What happened to a call the pool granted. */
export type PoolOutcome =
  | { readonly kind: 'success'; readonly result: EngineResult }
  | { readonly kind: 'fault'; readonly fault: Fault }
  | { readonly kind: 'reclaimed' };

/** Plain-data view of one endpoint's health, for the live view and the visualizer. */
export interface EndpointHealth {
  readonly id: string;
  readonly descriptor: EndpointDescriptor;
  readonly breaker: 'closed' | 'open' | 'halfOpen';
  readonly openUntil: number | null;
  readonly cooldownUntil: number;
  readonly disabledUntil: number;
  readonly disabledReason?: string;
  readonly inFlight: number;
  readonly concurrencyLimit?: number;
  readonly rpm?: { readonly capacity?: number; readonly available?: number };
  readonly tpm?: { readonly capacity?: number; readonly available?: number };
}

interface EndpointSlot {
  readonly config: ParsedEndpointConfig;
  readonly descriptor: EndpointDescriptor;
  readonly engine: Engine;
  readonly breaker: Actor<typeof breakerMachine>;
  readonly rpm: TokenBucket;
  readonly tpm: TokenBucket;
  readonly limiter?: AimdLimiter;
  readonly maxConcurrency?: number;
  cooldownUntil: number;
  disabledUntil: number;
  disabledReason?: string;
  consecutiveFaults: number;
  inFlight: number;
  probing: boolean;
  probeSeq: number;
}

/** What the pool needs from its owner. */
export interface EnginePoolOptions {
  readonly clock: Clock;
  /** Builds the engine of an endpoint (the unified adapter by default). */
  readonly createEngine: (config: ParsedEndpointConfig) => Engine;
  /** Receives the breakers' inspection events (the visualizer's feed). */
  readonly inspect?: (event: InspectionEvent) => void;
  /** Random source for backoff jitter. Default Math.random. */
  readonly random?: () => number;
  /** Called when an endpoint's breaker changes state. */
  readonly onBreakerChange?: (change: {
    endpointId: string;
    state: string;
    previous: string;
    openUntil: number | null;
  }) => void;
  /**
   * Called after the pool recorded a fault on an endpoint (a call's or a probe's), with the endpoint's health
   * already updated. The runtime revokes a BYOK key the provider refused (auth, credit) here. Default none.
   */
  readonly onFault?: (endpointId: string, fault: Fault) => void;
}

/**
 * The shared health of every endpoint: its breaker, cooldown (per endpoint — provider + key + model —
 * never per model name), RPM/TPM buckets corrected from the rate-limit headers, adaptive concurrency and
 * credit state. Owned by the supervisor; agents never touch it directly.
 *
 * @example
 * ```ts
 * const pool = new EnginePool(config, { clock: systemClock, createEngine });
 * const sel = pool.select('premium', clock.now(), 900);
 * ```
 */
export class EnginePool {
  readonly #slots = new Map<string, EndpointSlot>();
  readonly #chains: Readonly<Record<string, readonly string[]>>;
  readonly #config: RuntimeConfig;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #onFault: EnginePoolOptions['onFault'];

  constructor(config: RuntimeConfig, options: EnginePoolOptions) {
    this.#config = config;
    this.#chains = config.chains;
    this.#clock = options.clock;
    this.#random = options.random ?? Math.random;
    this.#onFault = options.onFault;
    for (const ep of config.endpoints) this.addEndpoint(ep, options);
  }

  /**
   * Adds an endpoint at run time (e.g. a BYOK key) with its own breaker, buckets and cooldown. The endpoint
   * is described by its engine's own descriptor: a BYOK config carries no key, its engine knows the fingerprint.
   */
  addEndpoint(
    config: ParsedEndpointConfig,
    options: Pick<EnginePoolOptions, 'createEngine' | 'inspect' | 'onBreakerChange'>,
  ): void {
    const engine = options.createEngine(config);
    const breaker = createActor(breakerMachine, {
      input: this.#config.breaker,
      clock: this.#clock as never,
      systemId: `breaker:${config.id}`,
      ...(options.inspect ? { inspect: options.inspect } : {}),
    });
    let previous = 'closed';
    breaker.subscribe((snap) => {
      const state = String(snap.value);
      if (state === previous) return;
      options.onBreakerChange?.({
        endpointId: config.id,
        state,
        previous,
        openUntil: snap.context.openUntil,
      });
      previous = state;
    });
    breaker.start();
    const adaptive = this.#config.concurrency.adaptive;
    const max = config.limits?.maxConcurrency ?? this.#config.concurrency.limit;
    this.#slots.set(config.id, {
      config,
      descriptor: engine.endpoint ?? describeEndpoint(config),
      engine,
      breaker,
      rpm: new TokenBucket({ ...(config.limits?.rpm ? { capacity: config.limits.rpm } : {}) }),
      tpm: new TokenBucket({ ...(config.limits?.tpm ? { capacity: config.limits.tpm } : {}) }),
      ...(adaptive ? { limiter: new AimdLimiter({ max }) } : {}),
      ...(config.limits?.maxConcurrency ? { maxConcurrency: config.limits.maxConcurrency } : {}),
      cooldownUntil: 0,
      disabledUntil: 0,
      consecutiveFaults: 0,
      inFlight: 0,
      probing: false,
      probeSeq: 0,
    });
  }

  /** Removes a run-time endpoint (expired BYOK key). Calls in flight finish; nothing new is granted. */
  removeEndpoint(id: string): void {
    const slot = this.#slots.get(id);
    if (!slot) return;
    slot.breaker.stop();
    this.#slots.delete(id);
  }

  /** The engine behind an endpoint id. */
  engine(id: string): Engine | undefined {
    return this.#slots.get(id)?.engine;
  }

  /** Endpoint ids of a chain, in order. */
  chain(name: string): readonly string[] {
    return this.#chains[name] ?? [];
  }

  /**
   * First endpoint in chain order that is closed, not cooling, not disabled and has room in its buckets
   * and concurrency; else the one that will be ready earliest (and why); else `none`.
   * `extraChain` endpoints (session-bound BYOK keys) are tried after the chain's own.
   */
  select(
    chainName: string,
    now: number,
    estimatedTokens: number,
    extraChain: readonly string[] = [],
  ): Selection {
    const ids = [...this.chain(chainName), ...extraChain];
    let best: Extract<Selection, { kind: 'wait' }> | undefined;
    for (const [index, id] of ids.entries()) {
      const slot = this.#slots.get(id);
      if (!slot) continue;
      const wait = this.#waitOf(slot, now, estimatedTokens);
      if (!wait) return { kind: 'ready', endpointId: id, index };
      if (!best || wait.until < best.until)
        best = { kind: 'wait', endpointId: id, index, until: wait.until, cause: wait.cause };
    }
    return best ?? { kind: 'none', reason: `chain "${chainName}" has no endpoint` };
  }

  #waitOf(slot: EndpointSlot, now: number, tokens: number): { until: number; cause: WaitCause } | undefined {
    if (slot.disabledUntil > now) return { until: slot.disabledUntil, cause: 'disabled' };
    const b = slot.breaker.getSnapshot();
    if (b.value === 'open' && b.context.openUntil !== null && now >= b.context.openUntil) {
      slot.breaker.send({ type: 'TICK', at: now });
    }
    const state = slot.breaker.getSnapshot();
    if (state.value === 'open')
      return { until: state.context.openUntil ?? now + HALF_OPEN_RECHECK_MS, cause: 'open' };
    if (state.value === 'halfOpen') return { until: now + HALF_OPEN_RECHECK_MS, cause: 'open' };
    if (slot.cooldownUntil > now) return { until: slot.cooldownUntil, cause: 'cooldown' };
    if (slot.maxConcurrency !== undefined && slot.inFlight >= slot.maxConcurrency)
      return { until: now, cause: 'concurrency' };
    if (slot.limiter && slot.inFlight >= slot.limiter.limit) return { until: now, cause: 'concurrency' };
    const rpmWait = slot.rpm.waitTime(1, now);
    const tpmWait = slot.tpm.waitTime(tokens, now);
    const wait = Math.max(rpmWait, tpmWait);
    if (wait > 0) return { until: now + wait, cause: 'pacing' };
    return undefined;
  }

  /** Takes the room a granted call uses: one request and its estimated tokens, one concurrency slot. */
  acquire(id: string, estimatedTokens: number, now: number): void {
    const slot = this.#slots.get(id);
    if (!slot) return;
    slot.rpm.tryTake(1, now);
    slot.tpm.tryTake(estimatedTokens, now);
    slot.limiter?.tryAcquire();
    slot.inFlight++;
  }

  /**
   * Records how a granted call ended: breaker outcome, cooldown (Retry-After honoured, else jittered
   * backoff), bucket correction from the response's rate-limit headers, credit/auth disable.
   */
  release(id: string, outcome: PoolOutcome, reservedTokens: number, now: number): void {
    const slot = this.#slots.get(id);
    if (!slot) return;
    slot.inFlight = Math.max(0, slot.inFlight - 1);
    if (outcome.kind === 'reclaimed') {
      slot.limiter?.release('other');
      return;
    }
    if (outcome.kind === 'success') {
      const r = outcome.result;
      slot.consecutiveFaults = 0;
      slot.breaker.send({ type: 'CALL_SUCCEEDED', at: now });
      slot.limiter?.release('success');
      const used = r.usage.inputTokens + r.usage.outputTokens;
      if (reservedTokens > used) slot.tpm.refund(reservedTokens - used, now);
      // Other calls granted on this endpoint are in flight and not yet counted in `remaining`.
      const others = slot.inFlight;
      const adjust = (w: RateLimitWindow | undefined): RateLimitWindow | undefined =>
        w && w.remaining !== undefined ? { ...w, remaining: Math.max(0, w.remaining - others) } : w;
      const req = adjust(r.rateLimit.requests);
      if (req) slot.rpm.observe(req, now);
      const tok = adjust(r.rateLimit.tokens ?? r.rateLimit.inputTokens);
      if (tok) slot.tpm.observe(tok, now);
      return;
    }
    this.recordFault(slot, outcome.fault, now);
  }

  /** A fault seen on an endpoint (a call's or a probe's). */
  recordFault(slotOrId: EndpointSlot | string, fault: Fault, now: number): void {
    const slot = typeof slotOrId === 'string' ? this.#slots.get(slotOrId) : slotOrId;
    if (!slot) return;
    this.#applyFault(slot, fault, now);
    // After the slot's health is settled: the listener may remove the endpoint (a revoked BYOK key).
    this.#onFault?.(slot.config.id, fault);
  }

  #applyFault(slot: EndpointSlot, fault: Fault, now: number): void {
    switch (fault.kind) {
      case 'credit_exhausted':
      case 'auth': {
        // The key is gone until a human acts: disable it for a long cooldown; never retried like a 429.
        const until = now + this.#config.creditCooldownMs;
        slot.disabledUntil = until;
        slot.disabledReason = fault.kind === 'auth' ? 'key refused (auth)' : 'credit exhausted';
        slot.breaker.send({ type: 'FORCE_OPEN', at: now, untilMs: until });
        slot.limiter?.release('other');
        return;
      }
      case 'rate_limited':
      case 'overloaded':
      case 'server_error':
      case 'network':
      case 'timeout': {
        const step = backoffDelay(slot.consecutiveFaults, {
          baseMs: this.#config.retry.baseBackoffMs,
          maxMs: this.#config.retry.maxBackoffMs,
          random: this.#random,
        });
        slot.consecutiveFaults++;
        const wait = fault.retryAfterMs !== undefined ? Math.max(fault.retryAfterMs, 0) : step;
        slot.cooldownUntil = Math.max(slot.cooldownUntil, now + wait);
        slot.breaker.send({
          type: 'CALL_FAILED',
          at: now,
          kind: fault.kind,
          ...(fault.retryAfterMs !== undefined ? { retryAfterMs: fault.retryAfterMs } : {}),
        });
        slot.limiter?.release(
          fault.kind === 'rate_limited' || fault.kind === 'overloaded' ? 'overload' : 'other',
        );
        return;
      }
      default:
        slot.limiter?.release('other');
    }
  }

  /** Endpoints whose breaker is HALF-OPEN and waiting for a probe. */
  pendingProbes(now: number): string[] {
    const out: string[] = [];
    for (const [id, slot] of this.#slots) {
      const s = slot.breaker.getSnapshot();
      if (s.value === 'open' && s.context.openUntil !== null && now >= s.context.openUntil) {
        slot.breaker.send({ type: 'TICK', at: now });
      }
      if (slot.breaker.getSnapshot().value === 'halfOpen' && !slot.probing && !s.context.probeInFlight)
        out.push(id);
    }
    return out;
  }

  /** The earliest moment a breaker leaves OPEN (for the supervisor's next scan), or undefined. */
  nextBreakerDeadline(): number | undefined {
    let min: number | undefined;
    for (const slot of this.#slots.values()) {
      const s = slot.breaker.getSnapshot();
      if (
        s.value === 'open' &&
        s.context.openUntil !== null &&
        (min === undefined || s.context.openUntil < min)
      )
        min = s.context.openUntil;
    }
    return min;
  }

  /**
   * Sends one tiny probe inference to a HALF-OPEN endpoint. Resolves true when it answered. The caller
   * holds a concurrency token for it.
   */
  async probe(id: string, signal?: AbortSignal): Promise<boolean> {
    const slot = this.#slots.get(id);
    if (!slot || slot.probing) return false;
    slot.probing = true;
    slot.inFlight++;
    slot.breaker.send({ type: 'PROBE_STARTED', at: this.#clock.now() });
    try {
      await slot.engine.call({
        messages: [{ role: 'user', content: 'ping' }],
        maxTokens: this.#config.probeMaxTokens,
        idempotencyKey: `probe:${id}:${++slot.probeSeq}`,
        ...(signal ? { signal } : {}),
      });
      const now = this.#clock.now();
      slot.breaker.send({ type: 'PROBE_SUCCEEDED', at: now });
      if (slot.breaker.getSnapshot().value === 'closed') {
        slot.disabledUntil = 0;
        delete slot.disabledReason;
        slot.cooldownUntil = 0;
        slot.consecutiveFaults = 0;
      }
      return true;
    } catch (e) {
      const now = this.#clock.now();
      const fault = (e as { fault?: Fault }).fault;
      if (fault && (fault.kind === 'credit_exhausted' || fault.kind === 'auth')) {
        slot.breaker.send({ type: 'PROBE_FAILED', at: now });
        this.recordFault(slot, fault, now);
      } else {
        slot.breaker.send({
          type: 'PROBE_FAILED',
          at: now,
          ...(fault?.retryAfterMs !== undefined ? { retryAfterMs: fault.retryAfterMs } : {}),
        });
      }
      return false;
    } finally {
      slot.probing = false;
      slot.inFlight = Math.max(0, slot.inFlight - 1);
    }
  }

  /** True when some endpoint of the chain could take a call now (or after pacing only). */
  chainHealthy(chainName: string, now: number, extraChain: readonly string[] = []): boolean {
    for (const id of [...this.chain(chainName), ...extraChain]) {
      const slot = this.#slots.get(id);
      if (!slot) continue;
      const w = this.#waitOf(slot, now, 0);
      if (!w || w.cause === 'pacing' || w.cause === 'concurrency') return true;
    }
    return false;
  }

  /** Plain-data health of every endpoint. */
  health(now: number): EndpointHealth[] {
    return [...this.#slots.values()].map((slot) => {
      const b = slot.breaker.getSnapshot();
      return {
        id: slot.config.id,
        descriptor: slot.descriptor,
        breaker: b.value as EndpointHealth['breaker'],
        openUntil: b.context.openUntil,
        cooldownUntil: slot.cooldownUntil,
        disabledUntil: slot.disabledUntil,
        ...(slot.disabledReason ? { disabledReason: slot.disabledReason } : {}),
        inFlight: slot.inFlight,
        ...(slot.limiter
          ? { concurrencyLimit: slot.limiter.limit }
          : slot.maxConcurrency
            ? { concurrencyLimit: slot.maxConcurrency }
            : {}),
        rpm: slot.rpm.state(now),
        tpm: slot.tpm.state(now),
      };
    });
  }

  /** Stops every breaker actor. */
  stop(): void {
    for (const slot of this.#slots.values()) slot.breaker.stop();
  }
}
