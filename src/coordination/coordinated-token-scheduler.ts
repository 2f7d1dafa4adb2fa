import type { Clock } from '../clock/clock.ts';
import type { CallSettlement } from '../health/endpoint-health-view.ts';
import type { EndpointRegistry } from '../health/endpoint-registry.ts';
import type { MemoryTokenScheduler } from '../scheduler/memory-token-scheduler.ts';
import {
  acquireTicket,
  type Grant,
  SchedulerClosedError,
  type TokenDecision,
  type TokenRequest,
  type TokenScheduler,
  type TokenTicket,
  type TokenView,
} from '../scheduler/token-scheduler.ts';
import { BackendGiveBacks } from './backend-give-backs.ts';
import type { CoordinationBackend } from './coordination-backend.ts';
import { CoordinationUnavailableError, isCoordinationUnavailableError } from './coordination-errors.ts';
import { GlobalLeaseBook } from './global-lease-book.ts';
import { newPending, type Pending } from './pending-request.ts';
import { ProbeClaims } from './probe-claims.ts';
import { ProbeParking } from './probe-parking.ts';
import type { SchedulerCore } from './scheduler-core.ts';
import {
  afterAnswer,
  afterFailure,
  closedFrom,
  connectionOf,
  type SchedulerPhase,
  UNCONNECTED,
  withConnection,
  withoutConnection,
} from './scheduler-phase.ts';
import { TokenDrain } from './token-drain.ts';

/** Options of {@link CoordinatedTokenScheduler}. */
export interface CoordinatedTokenSchedulerOptions {
  /** This process's own scheduler: tiers, endpoint choice, pacing, retry budget. */
  readonly local: MemoryTokenScheduler;
  readonly backend: CoordinationBackend;
  readonly endpoints: EndpointRegistry;
  /** The runtime's clock (endpoint readiness, decision times). */
  readonly clock: Clock;
  /** Global tokens (every process of the pool must use the same). */
  readonly limit: number;
  readonly leaseTtlMs: number;
  /** The backend became unusable or usable again: one line each way. */
  readonly onBackendState?: (
    state: { ok: false; error: CoordinationUnavailableError } | { ok: true },
  ) => void;
  /** Real time, ms (performance.now by default): lease deadlines are real time whatever the runtime's clock. */
  readonly now?: () => number;
  /**
   * Runtime-clock ms per real ms (a scaled scenario clock's `scale`). Default 1. Shared RPM/TPM windows are real
   * time: a scenario at scale 150 shares a window of 400 real ms for its simulated minute, and every process of
   * the pool must run at the same scale (the window length is part of the quota's name).
   */
  readonly timeScale?: number;
}

/**
 * The {@link TokenScheduler} of a process that shares its quota with others: the local scheduler picks who goes
 * next and on which endpoint (tiers, pacing, cooldowns), then a global token is taken from the backend before the
 * grant is handed out. Contract on top of the local one:
 * - never more than `limit` global tokens held across all processes (the backend's guarantee);
 * - a held token is renewed by heartbeat every third of the TTL; if a renewal fails or comes too late, the
 *   call is cancelled (its signal aborts with a LeaseFencedError) a fifth of the TTL before the backend could
 *   hand the token to someone else;
 * - waiters are woken by the backend's notifications (a token given back) or when the earliest lease expires,
 *   never by polling; waiting for a token another process holds has no max wait, as for a token of one process
 *   (the pool's limit is the same quota, spread): only a backend whose grants keep arriving too late to use (past
 *   the lease's or the permit's deadline) for the request's max wait denies it (the agent answers degraded);
 * - a HALF-OPEN probe is sent by one process of the pool at a time (a claim on the backend); the others wait for
 *   its outcome through the shared health (a failed probe reopens their breakers too);
 * - a call on an endpoint with `limits` (RPM/TPM) also takes its units from the endpoint's shared sliding window,
 *   so the pool's processes together never exceed the limit in any window; a full window paces the endpoint
 *   here until it has room (the local scheduler then waits or takes the next endpoint of the chain);
 * - the backend unreachable or lost: no token is granted (requests are denied: the agents answer degraded).
 *
 * @example
 * ```ts
 * const scheduler = new CoordinatedTokenScheduler({ local, backend, endpoints, limit: 3, leaseTtlMs: 10_000 });
 * const d = await scheduler.acquire(request, signal);
 * ```
 */
export class CoordinatedTokenScheduler implements TokenScheduler {
  readonly #o: CoordinatedTokenSchedulerOptions;
  readonly #local: MemoryTokenScheduler;
  readonly #now: () => number;
  /** Where it stands with its backend: its connection, whether the backend is down, closed (scheduler-phase.ts). */
  #phase: SchedulerPhase = UNCONNECTED;
  readonly #giveBacks: BackendGiveBacks;
  readonly #leases: GlobalLeaseBook;
  /** Probes waiting for another process's claim or for their endpoint's shared window to have room. */
  readonly #parking: ProbeParking;
  readonly #claims: ProbeClaims;
  readonly #drain: TokenDrain;

  constructor(options: CoordinatedTokenSchedulerOptions) {
    this.#o = options;
    this.#local = options.local;
    const now = options.now ?? (() => performance.now());
    this.#now = now;
    const core: SchedulerCore = {
      local: options.local,
      backend: options.backend,
      endpoints: options.endpoints,
      clock: options.clock,
      leaseTtlMs: options.leaseTtlMs,
      now,
      scale: options.timeScale ?? 1,
      closed: () => this.#phase.kind === 'closed',
      connect: () => this.connect(),
      failed: (e) => this.#fail(e),
      answered: () => this.#up(),
      dropConnection: () => {
        this.#phase = withoutConnection(this.#phase);
      },
      submit: (p) => this.#submit(p),
      withdraw: (p, reason) => this.#withdraw(p, reason),
      deny: (p, e) => this.#deny(p, e),
    };
    this.#giveBacks = new BackendGiveBacks(options.backend);
    this.#leases = new GlobalLeaseBook(core, this.#giveBacks);
    // Forward references, called only later (a timer, a settled promise): a parked probe's time comes and the probe
    // claims decide what it does; the claims put a probe at the head of the drain's queue.
    this.#parking = new ProbeParking(now, (p, why) => this.#claims.lookAgain(p, why));
    this.#claims = new ProbeClaims(core, this.#giveBacks, this.#parking, {
      serveFirst: (p) => this.#drain.serveFirst(p),
      remove: (p) => this.#drain.remove(p),
    });
    this.#drain = new TokenDrain(
      core,
      { leases: this.#leases, giveBacks: this.#giveBacks, parking: this.#parking, claims: this.#claims },
      Math.max(1, Math.floor(options.limit)),
    );
    options.backend.onWake(() => {
      this.#drain.woken();
      // A probe claim given back: parked probes look again (after any health message that came with it).
      if (this.#parking.size > 0) queueMicrotask(() => this.#parking.unparkProbes(undefined));
    });
    // Another process's probe settled (or its endpoint changed): parked probes look again, after the shared health
    // link (another listener of the same message) applied it.
    // Anyone may publish on the channel: only a message naming an endpoint is looked at.
    options.backend.onHealth((m: unknown) => {
      const endpointId = (m as { endpointId?: unknown } | null)?.endpointId;
      if (typeof endpointId === 'string' && this.#parking.size > 0)
        queueMicrotask(() => this.#parking.unparkProbes(endpointId));
    });
  }

  /** Connects once (every grant waits for it); a failure is kept so each request is denied at once. */
  connect(signal?: AbortSignal): Promise<void> {
    const kept = connectionOf(this.#phase);
    if (kept) return kept;
    const connection = this.#o.backend.connect(signal).then(
      () => this.#up(),
      (e: unknown) => {
        const error = isCoordinationUnavailableError(e)
          ? e
          : new CoordinationUnavailableError(
              `coordination.url: ${this.#o.backend.location} could not be used (${e instanceof Error ? e.message : String(e)})`,
            );
        this.#fail(error);
        throw error;
      },
    );
    this.#phase = withConnection(this.#phase, connection);
    return connection;
  }

  acquire(request: TokenRequest, signal?: AbortSignal): Promise<TokenDecision> {
    return acquireTicket(this.#phase.kind === 'closed', () => this.request(request), signal);
  }

  request(request: TokenRequest): TokenTicket {
    let p!: Pending;
    const decision = new Promise<TokenDecision>((resolve, reject) => {
      p = newPending(request, undefined, undefined, resolve as (d: TokenDecision | Grant) => void, reject);
    });
    if (this.#phase.kind === 'closed') {
      p.done = true;
      p.reject(new SchedulerClosedError());
    } else this.#submit(p);
    return {
      decision,
      withdraw: (reason?: unknown) =>
        this.#withdraw(p, reason ?? new Error('the token request was withdrawn')),
    };
  }

  acquireProbe(endpointId: string, signal?: AbortSignal): Promise<Grant> {
    if (this.#phase.kind === 'closed') return Promise.reject(new SchedulerClosedError());
    return new Promise<Grant>((resolve, reject) => {
      const p = newPending(
        undefined,
        endpointId,
        signal,
        resolve as (d: TokenDecision | Grant) => void,
        reject,
      );
      // The caller's signal is shared by many probes (the probe runner's): its listener goes when p settles.
      const onAbort = () => this.#withdraw(p, signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      const settle = p.resolve;
      const fail = p.reject;
      p.resolve = (d) => {
        signal?.removeEventListener('abort', onAbort);
        settle(d);
      };
      p.reject = (e) => {
        signal?.removeEventListener('abort', onAbort);
        fail(e);
      };
      // A breaker's HALF-OPEN probe is the pool's (one process sends it); anything else served as a probe (a BYOK
      // key's check call) is this process's own call.
      if (this.#o.endpoints.get(endpointId)?.health.wantsProbe()) void this.#claims.claim(p);
      else this.#claims.grant(p);
    });
  }

  claim(leaseId: string, onReclaim?: (reason: unknown) => void): Grant | undefined {
    const h = this.#leases.get(leaseId);
    if (!h || h.fence.signal.aborted) return undefined;
    // The fence timer may not have run yet (a frozen process's overdue timers run after its piled-up I/O): the
    // deadline itself decides, so no call starts on a lease the backend may already have given to someone else.
    if (!this.#leases.live(h)) return undefined;
    if (h.permit && this.#now() > h.permitDeadline) {
      this.release(leaseId, { kind: 'unused' });
      return undefined;
    }
    if (!this.#local.claim(leaseId, onReclaim)) return undefined;
    h.claimed = true;
    h.onReclaim = onReclaim;
    return h.grant;
  }

  release(leaseId: string, outcome: CallSettlement): void {
    const h = this.#leases.get(leaseId);
    this.#local.release(leaseId, outcome);
    if (!h) return;
    this.#leases.forget(leaseId, h);
    this.#giveBacks.release(h.lease);
    if (h.permit && outcome.kind === 'unused') this.#giveBacks.refund(h.permit);
    if (h.probeClaimed) this.#giveBacks.endProbe(h.grant.endpointId);
    this.#drain.woken();
    if (this.#leases.size === 0) this.#leases.stopHeartbeat();
  }

  releaseUnclaimed(leaseId: string): void {
    const h = this.#leases.get(leaseId);
    if (h && !h.claimed) this.release(leaseId, { kind: 'unused' });
  }

  setLimit(limit: number): void {
    this.#local.setLimit(limit);
    this.#drain.setLimit(limit);
  }

  wake(endpointId: string): void {
    this.#local.wake(endpointId);
  }

  rescan(): void {
    this.#local.rescan();
  }

  view(): TokenView {
    const local = this.#local.view();
    return {
      ...local,
      // Grants still waiting for a global token are queued, not held.
      held: this.#leases.size,
      holders: [...this.#leases.values()].map((h) => ({
        holder: h.grant.holder,
        endpointId: h.grant.endpointId,
        tier: h.grant.tier,
      })),
      queue: [
        ...this.#drain.waiting().map((p) => ({ agent: p.request!.holder, tier: p.request!.tier })),
        ...local.queue,
      ],
    };
  }

  close(reason: unknown = new SchedulerClosedError()): void {
    if (this.#phase.kind === 'closed') return;
    this.#phase = closedFrom(this.#phase);
    for (const p of this.#drain.takeAll()) this.#withdraw(p, reason);
    for (const p of this.#parking.parked()) this.#withdraw(p, reason);
    this.#parking.clear();
    this.#drain.stopRetry();
    this.#local.close(reason);
  }

  whenIdle(signal?: AbortSignal): Promise<void> {
    return this.#local.whenIdle(signal);
  }

  /** After close and idle: stops the heartbeat and closes the backend's connections. */
  async dispose(): Promise<void> {
    this.close();
    this.#leases.giveAllBack();
    // Tokens given back before the connections close, so other processes need not wait for the TTL; bounded: a
    // backend that does not answer leaves them to expire.
    const releasing = this.#giveBacks.inFlight();
    if (releasing.length > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.allSettled(releasing),
        new Promise((resolve) => {
          timer = setTimeout(resolve, Math.min(2_000, this.#o.leaseTtlMs));
        }),
      ]);
      clearTimeout(timer);
    }
    await this.#o.backend.close();
  }

  /** Asks the local scheduler; a local grant then queues for a global token. */
  #submit(p: Pending): void {
    const request = p.request!;
    const ticket = this.#local.request(request);
    p.localTicket = ticket;
    ticket.decision.then(
      (d) => {
        if (p.done) {
          if (d.kind === 'granted') this.#local.releaseUnclaimed(d.grant.leaseId);
          return;
        }
        if (d.kind !== 'granted') {
          p.done = true;
          p.resolve(d);
          return;
        }
        p.grant = d.grant;
        p.localTicket = undefined;
        p.lateSince = undefined;
        this.#drain.enqueue(p);
      },
      (e: unknown) => {
        if (p.done) return;
        p.done = true;
        p.reject(e);
      },
    );
  }

  #withdraw(p: Pending, reason: unknown): void {
    if (p.done) return;
    p.done = true;
    if (p.localTicket) p.localTicket.withdraw(reason);
    this.#drain.remove(p);
    this.#parking.unparkQuietly(p);
    if (!p.grant || !this.#leases.has(p.grant.leaseId)) {
      if (p.grant) this.#local.release(p.grant.leaseId, { kind: 'unused' });
      if (p.probeClaimed) this.#giveBacks.endProbe(p.probeOf!);
    }
    p.reject(reason);
  }

  #deny(p: Pending, e: unknown): void {
    if (p.done) return;
    p.done = true;
    this.#parking.unparkQuietly(p);
    if (p.grant) this.#local.release(p.grant.leaseId, { kind: 'unused' });
    if (p.probeClaimed) this.#giveBacks.endProbe(p.probeOf!);
    const reason = e instanceof Error ? e.message : String(e);
    if (p.request) p.resolve({ kind: 'denied', reason, at: this.#o.clock.now() });
    else p.reject(e);
  }

  /** A backend call failed: up → down, said once (see scheduler-phase.ts). */
  #fail(e: unknown): void {
    // Closed (its runtime stopped, say while it was still connecting): nothing is sent any more, so nothing failed
    // closed; a connect cut short by the close is not a backend that went away.
    const next = afterFailure(this.#phase);
    if (next === this.#phase) return;
    this.#phase = next;
    const error = isCoordinationUnavailableError(e)
      ? e
      : new CoordinationUnavailableError(
          `coordination.url: ${this.#o.backend.location} failed (${e instanceof Error ? e.message : String(e)}); not sending (fail closed)`,
        );
    this.#o.onBackendState?.({ ok: false, error });
  }

  /** A backend call answered: down → up, said once (see scheduler-phase.ts). */
  #up(): void {
    const next = afterAnswer(this.#phase);
    if (next === this.#phase) return;
    this.#phase = next;
    this.#o.onBackendState?.({ ok: true });
  }
}
