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
import type {
  CoordinationBackend,
  GlobalLease,
  RateAsk,
  RatePermit,
  RateTakeResult,
} from './coordination-backend.ts';
import { leaseKey, RATE_SLOTS } from './coordination-backend.ts';
import {
  CoordinationUnavailableError,
  isCoordinationUnavailableError,
  LeaseFencedError,
} from './coordination-errors.ts';

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

/** The minute of an endpoint's RPM/TPM limits, on the runtime's clock. */
const LIMIT_WINDOW_MS = 60_000;
/** A probe parked for another process's claim asks again at most this often, whatever the wake-ups (real ms). */
const MIN_RECLAIM_MS = 100;
/** A probe whose claim could not be asked for (backend down) fails after this, not at once (real ms). */
const CLAIM_FAILURE_DELAY_MS = 1_000;
/**
 * The shortest time a shared-window permit covers its call, real ms. A permit is good for one slot of its window
 * (1/60): at `timeScale` 150 that is 6.7 real ms, less than one statement's round trip on a loaded PostgreSQL, so
 * nearly every grant came back "too late" and was asked again until the turn degraded (a one-process run, whose
 * buckets are taken at grant time, never refuses a grant for its age). Below this floor the pool's count may miss
 * a call the provider counts in its next window: that call gets a 429, handled like any.
 */
const MIN_PERMIT_MS = 100;

/** A request granted by the local scheduler, waiting for a global token. */
interface Pending {
  readonly request: TokenRequest | undefined;
  /**
   * Real time the backend first answered it with a grant it could not use (past its lease's or its permit's
   * deadline) since its latest local grant; `undefined` while tokens are only busy. Its max wait counts from here.
   */
  lateSince: number | undefined;
  /** Withdrawn or settled. */
  done: boolean;
  /** A probe holding the pool's probe claim of its endpoint. */
  probeClaimed: boolean;
  /** A probe's endpoint (set before its local grant exists). */
  readonly probeOf: string | undefined;
  /**
   * Why a parked probe waits: `claim` — another process holds the pool's probe (it looks again when that endpoint's
   * shared health changes, a claim is given back, or the claim's TTL ran out), holding no token meanwhile; `pace` —
   * its endpoint's shared window is full (it looks again on its timer only).
   */
  parkedFor: 'claim' | 'pace' | undefined;
  /** Real time (`now()`) its claim was last asked for (a probe that waited long claims again before it goes). */
  claimedAt: number;
  /** Real time it was parked (wake-ups look again at most every {@link MIN_RECLAIM_MS}). */
  parkedAt: number;
  /** A probe's caller's signal (its claim is asked again with it). */
  readonly signal: AbortSignal | undefined;
  localTicket: TokenTicket | undefined;
  grant: Grant | undefined;
  resolve(d: TokenDecision | Grant): void;
  reject(e: unknown): void;
}

/** A grant that holds a global token. */
interface Held {
  readonly lease: GlobalLease;
  readonly grant: Grant;
  readonly fence: AbortController;
  /** Real time (`now()`) from which the backend may reissue the token, less the margin: no call starts after it. */
  deadline: number;
  claimed: boolean;
  onReclaim: ((reason: unknown) => void) | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** The units taken from the endpoint's shared RPM/TPM window (given back if the call never went). */
  readonly permit: RatePermit | undefined;
  /**
   * Real time after which the permit no longer covers the call: a unit is counted one slot past a whole window
   * after its slot, so a call that reaches the provider more than one slot after its permit was asked for could
   * be outside every window the pool checks (the provider would see more than its limit). `claim()` refuses it
   * then; the agent asks again.
   */
  readonly permitDeadline: number;
  /** It holds the pool's probe claim of its endpoint (renewed with the lease, given back with it). */
  readonly probeClaimed: boolean;
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
  readonly #scale: number;
  readonly #queue: Pending[] = [];
  /** Probes waiting for their endpoint's shared window to have room (each on its own timer). */
  readonly #parked = new Set<Pending>();
  readonly #parkTimers = new Map<Pending, ReturnType<typeof setTimeout>>();
  readonly #held = new Map<string, Held>();
  /** Releases sent to the backend and not answered yet: dispose() waits for them (bounded) before closing it. */
  readonly #releasing = new Set<Promise<void>>();
  #limit: number;
  #connected: Promise<void> | undefined;
  #pumping = false;
  #pumpAgain = false;
  #wakeEpoch = 0;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #renewing = false;
  #down = false;
  #closed = false;

  constructor(options: CoordinatedTokenSchedulerOptions) {
    this.#o = options;
    this.#local = options.local;
    this.#limit = Math.max(1, Math.floor(options.limit));
    this.#now = options.now ?? (() => performance.now());
    this.#scale = options.timeScale ?? 1;
    options.backend.onWake(() => {
      this.#wakeEpoch++;
      this.#pump();
      // A probe claim given back: parked probes look again (after any health message that came with it).
      if (this.#parked.size > 0) queueMicrotask(() => this.#unparkProbes(undefined));
    });
    // Another process's probe settled (or its endpoint changed): parked probes look again, after the shared health
    // link (another listener of the same message) applied it.
    // Anyone may publish on the channel: only a message naming an endpoint is looked at.
    options.backend.onHealth((m: unknown) => {
      const endpointId = (m as { endpointId?: unknown } | null)?.endpointId;
      if (typeof endpointId === 'string' && this.#parked.size > 0)
        queueMicrotask(() => this.#unparkProbes(endpointId));
    });
  }

  /** Connects once (every grant waits for it); a failure is kept so each request is denied at once. */
  connect(signal?: AbortSignal): Promise<void> {
    this.#connected ??= this.#o.backend.connect(signal).then(
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
    return this.#connected;
  }

  acquire(request: TokenRequest, signal?: AbortSignal): Promise<TokenDecision> {
    return acquireTicket(this.#closed, () => this.request(request), signal);
  }

  request(request: TokenRequest): TokenTicket {
    let p!: Pending;
    const decision = new Promise<TokenDecision>((resolve, reject) => {
      p = {
        request,
        lateSince: undefined,
        done: false,
        probeClaimed: false,
        probeOf: undefined,
        parkedFor: undefined,
        claimedAt: 0,
        parkedAt: 0,
        signal: undefined,
        localTicket: undefined,
        grant: undefined,
        resolve: resolve as (d: TokenDecision | Grant) => void,
        reject,
      };
    });
    if (this.#closed) {
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
    if (this.#closed) return Promise.reject(new SchedulerClosedError());
    return new Promise<Grant>((resolve, reject) => {
      const p: Pending = {
        request: undefined,
        lateSince: undefined,
        done: false,
        probeClaimed: false,
        probeOf: endpointId,
        parkedFor: undefined,
        claimedAt: 0,
        parkedAt: 0,
        signal,
        localTicket: undefined,
        grant: undefined,
        resolve: resolve as (d: TokenDecision | Grant) => void,
        reject,
      };
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
      if (this.#o.endpoints.get(endpointId)?.health.wantsProbe()) void this.#claimProbe(p);
      else this.#probeGrant(p);
    });
  }

  /**
   * Takes the pool's probe claim of p's endpoint before any token: a process whose peer probes parks without
   * holding a local token, and looks again when the outcome arrives (or the claim is given back or expires).
   */
  async #claimProbe(p: Pending): Promise<void> {
    const endpointId = p.probeOf!;
    let mine: boolean;
    const sentAt = this.#now();
    try {
      await this.connect();
      mine = await this.#o.backend.claimProbe(endpointId, this.#o.leaseTtlMs);
    } catch (e) {
      if (this.#closed) {
        this.#withdraw(p, new SchedulerClosedError());
        return;
      }
      this.#fail(e);
      this.#connected = undefined;
      // Settled on a timer, not at once: a caller that asks again at once (the probe runner, while the breaker wants
      // a probe) would otherwise spin in microtasks and starve the reconnect.
      const timer = setTimeout(() => this.#withdraw(p, e), CLAIM_FAILURE_DELAY_MS);
      timer.unref?.();
      return;
    }
    p.claimedAt = sentAt;
    this.#up();
    if (p.done || this.#closed) {
      if (mine) this.#endProbe(endpointId);
      this.#withdraw(p, new SchedulerClosedError());
      return;
    }
    if (!mine) {
      this.#park(p, 'claim', this.#o.leaseTtlMs);
      return;
    }
    p.probeClaimed = true;
    this.#probeGrant(p);
  }

  /** The local probe grant (served before every tier), then a global token. */
  #probeGrant(p: Pending): void {
    this.#local.acquireProbe(p.probeOf!, p.signal).then(
      (grant) => {
        if (p.done) return this.#local.release(grant.leaseId, { kind: 'unused' });
        p.grant = grant;
        // Probes are served before every tier, here too.
        this.#queue.unshift(p);
        this.#pump();
      },
      (e: unknown) => this.#withdraw(p, e),
    );
  }

  claim(leaseId: string, onReclaim?: (reason: unknown) => void): Grant | undefined {
    const h = this.#held.get(leaseId);
    if (!h || h.fence.signal.aborted) return undefined;
    // The fence timer may not have run yet (a frozen process's overdue timers run after its piled-up I/O): the
    // deadline itself decides, so no call starts on a lease the backend may already have given to someone else.
    if (!this.#live(h)) return undefined;
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
    const h = this.#held.get(leaseId);
    this.#local.release(leaseId, outcome);
    if (!h) return;
    this.#held.delete(leaseId);
    if (h.timer) clearTimeout(h.timer);
    this.#releaseGlobal(h.lease);
    if (h.permit && outcome.kind === 'unused') this.#refund(h.permit);
    if (h.probeClaimed) this.#endProbe(h.grant.endpointId);
    this.#wakeEpoch++;
    this.#pump();
    if (this.#held.size === 0) this.#stopHeartbeat();
  }

  releaseUnclaimed(leaseId: string): void {
    const h = this.#held.get(leaseId);
    if (h && !h.claimed) this.release(leaseId, { kind: 'unused' });
  }

  setLimit(limit: number): void {
    this.#local.setLimit(limit);
    this.#limit = Math.floor(limit);
    this.#pump();
  }

  wake(endpointId: string): void {
    this.#local.wake(endpointId);
  }

  rescan(): void {
    this.#local.rescan();
  }

  view(): TokenView {
    const local = this.#local.view();
    const held = new Set(this.#held.keys());
    return {
      ...local,
      // Grants still waiting for a global token are queued, not held.
      held: held.size,
      holders: [...this.#held.values()].map((h) => ({
        holder: h.grant.holder,
        endpointId: h.grant.endpointId,
        tier: h.grant.tier,
      })),
      queue: [
        ...this.#queue
          .filter((p) => !p.done && p.request)
          .map((p) => ({ agent: p.request!.holder, tier: p.request!.tier })),
        ...local.queue,
      ],
    };
  }

  close(reason: unknown = new SchedulerClosedError()): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const p of this.#queue.splice(0)) this.#withdraw(p, reason);
    for (const p of [...this.#parked]) this.#withdraw(p, reason);
    for (const t of this.#parkTimers.values()) clearTimeout(t);
    this.#parked.clear();
    this.#parkTimers.clear();
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    this.#local.close(reason);
  }

  whenIdle(signal?: AbortSignal): Promise<void> {
    return this.#local.whenIdle(signal);
  }

  /** After close and idle: stops the heartbeat and closes the backend's connections. */
  async dispose(): Promise<void> {
    this.close();
    for (const h of this.#held.values()) {
      if (h.timer) clearTimeout(h.timer);
      this.#releaseGlobal(h.lease);
      if (h.permit && !h.claimed) this.#refund(h.permit);
      if (h.probeClaimed) this.#endProbe(h.grant.endpointId);
    }
    this.#held.clear();
    this.#stopHeartbeat();
    // Tokens given back before the connections close, so other processes need not wait for the TTL; bounded: a
    // backend that does not answer leaves them to expire.
    if (this.#releasing.size > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.allSettled([...this.#releasing]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, Math.min(2_000, this.#o.leaseTtlMs));
        }),
      ]);
      clearTimeout(timer);
    }
    await this.#o.backend.close();
  }

  /** Gives a global token back; a failed release is a token that comes back at its expiry (never over the limit). */
  #releaseGlobal(lease: GlobalLease): void {
    this.#track(this.#o.backend.release(lease));
  }

  /** Gives a call's shared window units back (it never went); a failed refund only leaves the window fuller. */
  #refund(permit: RatePermit): void {
    this.#track(this.#o.backend.refundRate(permit));
  }

  /** Gives the pool's probe claim of an endpoint back; a failed one only expires with its TTL. */
  #endProbe(endpointId: string): void {
    this.#track(this.#o.backend.endProbe(endpointId));
  }

  /** A give-back in flight: dispose() waits for it (bounded) before closing the backend. */
  #track(sending: Promise<void>): void {
    const p: Promise<void> = sending.then(
      () => {
        this.#releasing.delete(p);
      },
      () => {
        this.#releasing.delete(p);
      },
    );
    this.#releasing.add(p);
  }

  /** Whether the lease may still carry a call (its fence deadline is ahead); fences it at once if not. */
  #live(h: Held): boolean {
    if (this.#now() < h.deadline) return true;
    this.#fenced(h);
    return false;
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
        this.#queue.push(p);
        this.#pump();
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
    const i = this.#queue.indexOf(p);
    if (i >= 0) this.#queue.splice(i, 1);
    this.#unparkQuietly(p);
    if (!p.grant || !this.#held.has(p.grant.leaseId)) {
      if (p.grant) this.#local.release(p.grant.leaseId, { kind: 'unused' });
      if (p.probeClaimed) this.#endProbe(p.probeOf!);
    }
    p.reject(reason);
  }

  /** Takes global tokens for the queue's head while there are any; one attempt at a time. */
  #pump(): void {
    if (this.#closed || this.#queue.length === 0) return;
    if (this.#pumping) {
      // A request queued while the drain was finishing (after its last look, before its end): it runs once more.
      this.#pumpAgain = true;
      return;
    }
    this.#pumping = true;
    this.#pumpAgain = false;
    void this.#drain().finally(() => {
      this.#pumping = false;
      if (this.#pumpAgain) {
        this.#pumpAgain = false;
        this.#pump();
      }
    });
  }

  async #drain(): Promise<void> {
    try {
      await this.connect();
    } catch (e) {
      for (const p of this.#queue.splice(0)) this.#deny(p, e);
      this.#connected = undefined;
      return;
    }
    while (!this.#closed) {
      const p = this.#queue[0];
      if (!p) return;
      if (p.done) {
        this.#queue.shift();
        continue;
      }
      // Every request whose grants kept coming too late for its max wait answers now, not only the head.
      if (this.#denyOverdue()) continue;
      if (!p.request && p.probeClaimed && this.#now() - p.claimedAt > this.#o.leaseTtlMs / 2) {
        // The probe waited for a token long enough that its claim may run out: claim again (this process's own claim
        // is renewed) so it never goes beside another process's probe.
        const sentAt = this.#now();
        let mine: boolean;
        try {
          mine = await this.#o.backend.claimProbe(p.probeOf!, this.#o.leaseTtlMs);
        } catch (e) {
          this.#fail(e);
          for (const q of this.#queue.splice(0)) this.#deny(q, e);
          return;
        }
        if (p.done || this.#closed) {
          if (mine) this.#endProbe(p.probeOf!);
          continue;
        }
        if (!mine) {
          // Another process took it when ours ran out: this one waits for that probe's outcome, holding nothing.
          const at = this.#queue.indexOf(p);
          if (at >= 0) this.#queue.splice(at, 1);
          p.probeClaimed = false;
          this.#local.release(p.grant!.leaseId, { kind: 'unused' });
          p.grant = undefined;
          this.#park(p, 'claim', this.#o.leaseTtlMs);
          continue;
        }
        p.claimedAt = sentAt;
      }
      const epoch = this.#wakeEpoch;
      // The lease runs from when the backend granted it, at the latest when the request reached it: its deadline
      // counts from the sending, never from the (possibly late) reply.
      const sentAt = this.#now();
      let result: Awaited<ReturnType<CoordinationBackend['tryAcquire']>>;
      try {
        result = await this.#o.backend.tryAcquire(this.#limit);
      } catch (e) {
        this.#fail(e);
        // Fail closed: nothing waits for a backend that is gone; the agents answer degraded.
        for (const q of this.#queue.splice(0)) this.#deny(q, e);
        return;
      }
      this.#up();
      if (result.ok) {
        // By identity: while the backend answered, p may have been withdrawn or a probe put in front of it.
        const at = this.#queue.indexOf(p);
        if (at >= 0) this.#queue.splice(at, 1);
        if (p.done || this.#closed) {
          this.#releaseGlobal(result.lease);
          continue;
        }
        const deadline = sentAt + this.#o.leaseTtlMs - this.#margin();
        if (this.#now() >= deadline) {
          // The grant came back too late to be used safely: give it back and ask again (the request keeps its place;
          // its max wait, counted from the first such grant, bounds the retries).
          this.#releaseGlobal(result.lease);
          this.#late(p);
          this.#queue.unshift(p);
          continue;
        }
        if (this.#cooledElsewhere(p)) {
          this.#releaseGlobal(result.lease);
          this.#resubmit(p);
          continue;
        }
        const ask = this.#rateAsk(p.grant!);
        let permit: RatePermit | undefined;
        let permitDeadline = Infinity;
        if (ask) {
          // The permit's slot is read by the backend after this: one slot from here is a safe (early) bound.
          permitDeadline = this.#now() + Math.max(ask.windowMs / RATE_SLOTS, MIN_PERMIT_MS);
          let rate: RateTakeResult;
          try {
            rate = await this.#o.backend.takeRate(ask);
          } catch (e) {
            this.#releaseGlobal(result.lease);
            this.#fail(e);
            // Fail closed, as for a token: no call goes without its window's permit.
            this.#deny(p, e);
            for (const q of this.#queue.splice(0)) this.#deny(q, e);
            return;
          }
          if (p.done || this.#closed) {
            this.#releaseGlobal(result.lease);
            if (rate.ok) this.#refund(rate.permit);
            // Closed while asking: p is in no queue close() saw, so it is settled here.
            if (!p.done) this.#withdraw(p, new SchedulerClosedError());
            continue;
          }
          if (!rate.ok) {
            this.#releaseGlobal(result.lease);
            this.#paced(p, rate.retryInMs);
            continue;
          }
          permit = rate.permit;
          if (this.#now() >= Math.min(deadline, permitDeadline)) {
            this.#releaseGlobal(result.lease);
            this.#refund(permit);
            this.#late(p);
            if (p.request) this.#queue.unshift(p);
            // A probe has no max wait: it asks again a slot later, not in a tight loop.
            else this.#park(p, 'pace', ask.windowMs / RATE_SLOTS);
            continue;
          }
        }
        this.#granted(p, result.lease, deadline, permit, permitDeadline);
        continue;
      }
      // A token came back while we asked: ask again at once, else sleep until a wake-up or the earliest expiry.
      if (epoch !== this.#wakeEpoch) continue;
      this.#armRetry(result.retryInMs);
      return;
    }
  }

  #armRetry(retryInMs: number | undefined): void {
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    // Max waits are runtime-clock ms, timers real ms; the earliest of the queue's wakes the pump to deny it.
    let untilDeadline = Infinity;
    for (const q of this.#queue)
      if (q.request && !q.done && q.lateSince !== undefined)
        untilDeadline = Math.min(untilDeadline, q.lateSince + this.#lateBound(q.request) - this.#now());
    const wait = Math.max(1, Math.min(retryInMs ?? this.#o.leaseTtlMs, untilDeadline));
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#pump();
    }, wait);
    this.#retryTimer.unref?.();
  }

  /** The backend answered p with a grant too late to use: from the first such grant, its max wait runs. */
  #late(p: Pending): void {
    p.lateSince ??= this.#now();
  }

  /**
   * The backend's grants kept arriving too late to use for longer than its max wait (a backend that answers, but
   * never in time): it answers degraded. Tokens merely busy elsewhere are waited for, as in one process.
   */
  #overdue(p: Pending): boolean {
    return (
      p.request !== undefined &&
      p.lateSince !== undefined &&
      this.#now() - p.lateSince > this.#lateBound(p.request)
    );
  }

  /**
   * How long grants may keep arriving too late before the request is denied, real ms: its max wait, and at least
   * two lease TTLs. A late grant is the backend's real-time slowness (a statement slower than the lease's margin,
   * as the first ones of a process starting beside others): on a scaled clock a max wait of 10 simulated s is
   * 67 real ms at `timeScale` 150, which one slow statement at start-up outlasts.
   */
  #lateBound(request: TokenRequest): number {
    return Math.max(request.maxWaitMs / this.#scale, 2 * this.#o.leaseTtlMs);
  }

  /** Denies every queued request past its max wait; true if any was. */
  #denyOverdue(): boolean {
    let any = false;
    for (const q of [...this.#queue]) {
      if (q.done || !this.#overdue(q)) continue;
      this.#queue.splice(this.#queue.indexOf(q), 1);
      this.#deny(
        q,
        new Error(
          `the coordination backend's grants kept arriving too late to use for ${Math.round(this.#lateBound(q.request!))} real ms (max wait ${q.request!.maxWaitMs} ms, at least two lease TTLs)`,
        ),
      );
      any = true;
    }
    return any;
  }

  /** The endpoint was cooled by another process while this grant waited for its token: do not send to it. */
  #cooledElsewhere(p: Pending): boolean {
    if (!p.request) return false;
    const r = this.#o.endpoints.get(p.grant!.endpointId)?.health.readiness(this.#localNow(), 0);
    return r !== undefined && (r.cause === 'cooldown' || r.cause === 'open' || r.cause === 'disabled');
  }

  /** Gives the local grant back and asks the local scheduler again (it may pick another endpoint, or wait). */
  #resubmit(p: Pending): void {
    this.#local.release(p.grant!.leaseId, { kind: 'unused' });
    p.grant = undefined;
    this.#submit(p);
  }

  /** What the grant's call takes from its endpoint's shared RPM/TPM window; undefined if it has no limits. */
  #rateAsk(grant: Grant): RateAsk | undefined {
    const health = this.#o.endpoints.get(grant.endpointId)?.health;
    if (!health) return undefined;
    const { rpm, tpm } = health.sharedLimits(this.#localNow());
    if (rpm === undefined && tpm === undefined) return undefined;
    return {
      key: grant.endpointId,
      windowMs: LIMIT_WINDOW_MS / this.#scale,
      rpm,
      tpm,
      tokens: grant.estimatedTokens,
    };
  }

  /**
   * The endpoint's shared window is full for `retryInMs` real ms: the endpoint paces here until then and the request
   * goes back to the local scheduler (which waits or falls back, as for its own bucket). A probe keeps its grant and
   * asks again then (it is one call, due once the window has room).
   */
  #paced(p: Pending, retryInMs: number): void {
    const grant = p.grant!;
    const now = this.#localNow();
    this.#o.endpoints.get(grant.endpointId)?.health.paceUntil(now + retryInMs * this.#scale);
    if (p.request) {
      this.#resubmit(p);
      return;
    }
    this.#park(p, 'pace', retryInMs);
  }

  /**
   * A probe waits until `ms` real ms passed or, if it is parked for the pool's claim, until its endpoint's shared
   * health changes or a claim is given back: it is dropped then if the breaker here no longer wants a probe (the
   * other's probe decided), else it asks again (a paced probe keeps its local grant and asks for its token again).
   */
  #park(p: Pending, why: 'claim' | 'pace', ms: number): void {
    p.parkedFor = why;
    p.parkedAt = this.#now();
    this.#parked.add(p);
    const timer = setTimeout(() => this.#unpark(p), Math.max(1, ms));
    timer.unref?.();
    this.#parkTimers.set(p, timer);
  }

  /** Takes p off the parked set without looking again (it settled). */
  #unparkQuietly(p: Pending): boolean {
    if (!this.#parked.delete(p)) return false;
    clearTimeout(this.#parkTimers.get(p));
    this.#parkTimers.delete(p);
    return true;
  }

  #unpark(p: Pending): void {
    if (!this.#unparkQuietly(p)) return;
    const why = p.parkedFor;
    p.parkedFor = undefined;
    if (p.done || this.#closed) return;
    const health = this.#o.endpoints.get(p.probeOf!)?.health;
    if (!health?.wantsProbe()) {
      this.#withdraw(p, new Error('the probe is no longer wanted (another process probed the endpoint)'));
      return;
    }
    if (why === 'claim') {
      void this.#claimProbe(p);
      return;
    }
    this.#queue.unshift(p);
    this.#pump();
  }

  /**
   * Unparks the claim-parked probes of one endpoint, or of every endpoint (`undefined`). Paced probes wait for their
   * own timer: a wake-up cannot make room in a window.
   */
  #unparkProbes(endpointId: string | undefined): void {
    const now = this.#now();
    for (const p of [...this.#parked]) {
      if (p.parkedFor !== 'claim' || (endpointId !== undefined && p.probeOf !== endpointId)) continue;
      // Wake-ups come with every token given back in the pool: a parked probe asks again at most every
      // MIN_RECLAIM_MS (a sooner wake moves its timer there), not once per wake-up.
      const due = p.parkedAt + MIN_RECLAIM_MS;
      if (now >= due) this.#unpark(p);
      else {
        clearTimeout(this.#parkTimers.get(p));
        const timer = setTimeout(() => this.#unpark(p), due - now);
        timer.unref?.();
        this.#parkTimers.set(p, timer);
      }
    }
  }

  #granted(
    p: Pending,
    lease: GlobalLease,
    deadline: number,
    permit: RatePermit | undefined,
    permitDeadline: number,
  ): void {
    const grant = p.grant!;
    const fence = new AbortController();
    const wrapped: Grant = { ...grant, signal: AbortSignal.any([grant.signal, fence.signal]) };
    const held: Held = {
      lease,
      grant: wrapped,
      fence,
      deadline,
      claimed: false,
      onReclaim: undefined,
      timer: undefined,
      permit,
      permitDeadline,
      probeClaimed: p.probeClaimed,
    };
    this.#held.set(grant.leaseId, held);
    this.#armFence(held, deadline);
    this.#startHeartbeat();
    p.done = true;
    p.resolve(p.request ? { kind: 'granted', grant: wrapped } : wrapped);
  }

  #localNow(): number {
    return this.#o.clock.now();
  }

  #deny(p: Pending, e: unknown): void {
    if (p.done) return;
    p.done = true;
    this.#unparkQuietly(p);
    if (p.grant) this.#local.release(p.grant.leaseId, { kind: 'unused' });
    if (p.probeClaimed) this.#endProbe(p.probeOf!);
    const reason = e instanceof Error ? e.message : String(e);
    if (p.request) p.resolve({ kind: 'denied', reason, at: this.#localNow() });
    else p.reject(e);
  }

  /** Cancels the call a fifth of the TTL before the backend could reissue its token. */
  #margin(): number {
    return Math.max(20, this.#o.leaseTtlMs / 5);
  }

  #armFence(h: Held, at: number): void {
    if (h.timer) clearTimeout(h.timer);
    h.deadline = at;
    h.timer = setTimeout(() => this.#fenced(h), Math.max(0, at - this.#now()));
    h.timer.unref?.();
  }

  #fenced(h: Held): void {
    if (h.timer) clearTimeout(h.timer);
    h.timer = undefined;
    if (h.fence.signal.aborted) return;
    const reason = new LeaseFencedError();
    h.fence.abort(reason);
    h.onReclaim?.(reason);
  }

  #startHeartbeat(): void {
    if (this.#heartbeat) return;
    this.#heartbeat = setInterval(() => void this.#renew(), Math.max(10, this.#o.leaseTtlMs / 3));
    this.#heartbeat.unref?.();
  }

  #stopHeartbeat(): void {
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  async #renew(): Promise<void> {
    if (this.#renewing || this.#held.size === 0) return;
    this.#renewing = true;
    const sentAt = this.#now();
    // A lease past its deadline is fenced, not renewed: its call may not go on even if the backend still has it.
    const held = [...this.#held.values()].filter((h) => !h.fence.signal.aborted && this.#live(h));
    try {
      const renewed = await this.#o.backend.renew(held.map((h) => h.lease));
      this.#up();
      for (const h of held) {
        if (renewed.has(leaseKey(h.lease))) {
          if (!h.fence.signal.aborted) this.#armFence(h, sentAt + this.#o.leaseTtlMs - this.#margin());
        } else this.#fenced(h);
      }
      this.#renewProbeClaims(held);
    } catch (e) {
      // Each held call is cancelled at its own fence deadline if no later renewal succeeds.
      this.#fail(e);
    } finally {
      this.#renewing = false;
    }
  }

  /**
   * A probe longer than the TTL keeps the pool's claim with its token; a claim another process took meanwhile (ours
   * ran out) means two probes at once: ours stops. Not awaited by the heartbeat (a slow claim must not hold up the
   * tokens' renewal); a probe that settled while its claim was renewed gives the claim back again.
   */
  #renewProbeClaims(held: readonly Held[]): void {
    for (const h of held) {
      if (!h.probeClaimed || h.fence.signal.aborted || this.#held.get(h.grant.leaseId) !== h) continue;
      this.#o.backend.claimProbe(h.grant.endpointId, this.#o.leaseTtlMs).then(
        (mine) => {
          if (this.#held.get(h.grant.leaseId) !== h) {
            if (mine) this.#endProbe(h.grant.endpointId);
          } else if (!mine) this.#fenced(h);
        },
        // The probe's own fence deadline stops it if no later renewal succeeds.
        () => {},
      );
    }
  }

  #fail(e: unknown): void {
    // Closed (its runtime stopped, say while it was still connecting): nothing is sent any more, so nothing failed
    // closed; a connect cut short by the close is not a backend that went away.
    if (this.#down || this.#closed) return;
    this.#down = true;
    const error = isCoordinationUnavailableError(e)
      ? e
      : new CoordinationUnavailableError(
          `coordination.url: ${this.#o.backend.location} failed (${e instanceof Error ? e.message : String(e)}); not sending (fail closed)`,
        );
    this.#o.onBackendState?.({ ok: false, error });
  }

  #up(): void {
    if (!this.#down) return;
    this.#down = false;
    this.#o.onBackendState?.({ ok: true });
  }
}
