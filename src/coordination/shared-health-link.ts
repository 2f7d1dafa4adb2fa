import type { Clock } from '../clock/clock.ts';
import { isScaledClock } from '../clock/scaled-clock.ts';
import type { RateLimitWindow } from '../core/engine-types.ts';
import type { EndpointRegistry } from '../health/endpoint-registry.ts';
import type {
  CoordinationBackend,
  SharedHealthFacts,
  SharedHealthMessage,
  SharedWindow,
} from './coordination-backend.ts';
import { checkSharedHealthMessage } from './shared-health-check.ts';

/** Options of {@link SharedHealthLink}. */
export interface SharedHealthLinkOptions {
  readonly backend: CoordinationBackend;
  readonly endpoints: EndpointRegistry;
  readonly clock: Clock;
  readonly processId: string;
  /** Another process's health was applied here (its waiters may need to look again). */
  readonly onAbsorbed?: (endpointId: string) => void;
  /** Publishing failed (the backend is gone): the scheduler fails closed on its own; this is for the log. */
  readonly onError?: (error: unknown) => void;
  /** The first malformed health message or stored row (dropped; later ones are only counted): for the log. */
  readonly onMalformed?: (what: string) => void;
  /** Rate-limit counts of one endpoint are published at most this often (a fault goes at once), ms. Default 250. */
  readonly rateLimitEveryMs?: number;
}

/** Counts older than this are not applied (the providers' windows are a minute), runtime-clock ms. */
const MAX_COUNT_AGE_MS = 60_000;
/** Counts seen "in the future" beyond this clock skew are not applied (they would stay fresh too long), wall ms. */
const MAX_CLOCK_SKEW_MS = 5_000;

interface Counts {
  readonly requests?: SharedWindow;
  readonly tokens?: SharedWindow;
  readonly observedAt: number;
}

/**
 * Shares endpoint health between the processes of a pool: a fault recorded here (a 429's cooldown, a credit
 * loss's disable, an OPEN breaker) is published at once, and the provider's rate-limit counts from the response
 * headers at most every `rateLimitEveryMs`; what others publish is absorbed, only ever making an endpoint wait
 * longer. Deadlines travel as wall-clock instants and are turned into this runtime's clock on arrival, at the
 * clock's scale both ways (a scenario at `timeScale` 150 publishes a 30 s simulated breaker as 200 real ms), so a
 * deadline means the same instant of the run in every process, however late the message (or a stored row read
 * by a process joining later) arrives; without the scale a stored row kept every joiner's breaker open for 30
 * real seconds (75 simulated minutes) and each republication pushed a disable further.
 *
 * @example
 * ```ts
 * const link = new SharedHealthLink({ backend, endpoints, clock, processId: 'w1' });
 * await link.join();
 * link.publish('sonnet'); // after a 429 on sonnet
 * ```
 */
export class SharedHealthLink {
  readonly #o: SharedHealthLinkOptions;
  /** Runtime-clock ms per wall ms (a scaled scenario clock's scale; 1 on the system clock). */
  readonly #scale: number;
  readonly #counts = new Map<string, Counts>();
  readonly #countTimers = new Map<string, ReturnType<typeof setTimeout>>();
  readonly #lastCountPublish = new Map<string, number>();
  #malformed = 0;

  constructor(options: SharedHealthLinkOptions) {
    this.#o = options;
    this.#scale = isScaledClock(options.clock) ? options.clock.scale : 1;
    options.backend.onHealth((raw) => {
      const m = this.#check(raw, 'message');
      if (m && m.from !== options.processId) this.#absorb(m);
    });
  }

  /** Malformed health messages and stored rows dropped so far. */
  get malformed(): number {
    return this.#malformed;
  }

  /** Applies what was published before this process joined (each stored row on its own: a bad one is skipped). */
  async join(): Promise<void> {
    for (const raw of await this.#o.backend.loadHealth()) {
      const m = this.#check(raw, 'stored row');
      if (m) this.#absorb(m);
    }
  }

  #check(raw: unknown, what: string): SharedHealthMessage | undefined {
    const m = checkSharedHealthMessage(raw);
    if (m) return m;
    if (this.#malformed++ === 0) {
      const endpoint = (raw as { endpointId?: unknown } | null)?.endpointId;
      this.#o.onMalformed?.(
        `a malformed shared health ${what}${typeof endpoint === 'string' ? ` (endpoint ${endpoint.slice(0, 100)})` : ''} was ignored; later ones are only counted`,
      );
    }
    return undefined;
  }

  /** Publishes `endpointId`'s current cooldown, disable and breaker deadline (and its last counts). */
  publish(endpointId: string): void {
    const facts = this.#facts(endpointId);
    if (!facts) return;
    if (
      facts.cooldownUntil === 0 &&
      facts.disabledUntil === 0 &&
      facts.openUntil === null &&
      !facts.requests &&
      !facts.tokens
    )
      return;
    this.#lastCountPublish.set(endpointId, Date.now());
    this.#o.backend.publishHealth(endpointId, facts).catch((e: unknown) => this.#o.onError?.(e));
  }

  /** A response's rate-limit counts: kept, and published (throttled per endpoint, the latest counts win). */
  rateLimit(endpointId: string, windows: { requests?: RateLimitWindow; tokens?: RateLimitWindow }): void {
    const now = this.#o.clock.now();
    const wall = Date.now();
    const toShared = (w: RateLimitWindow | undefined): SharedWindow | undefined =>
      w && {
        ...(w.limit !== undefined ? { limit: w.limit } : {}),
        ...(w.remaining !== undefined ? { remaining: w.remaining } : {}),
        ...(w.resetAt !== undefined ? { resetAt: wall + Math.max(0, w.resetAt - now) / this.#scale } : {}),
      };
    const requests = toShared(windows.requests);
    const tokens = toShared(windows.tokens);
    this.#counts.set(endpointId, {
      ...(requests ? { requests } : {}),
      ...(tokens ? { tokens } : {}),
      observedAt: wall,
    });
    if (this.#countTimers.has(endpointId)) return;
    const every = this.#o.rateLimitEveryMs ?? 250;
    const wait = Math.max(0, (this.#lastCountPublish.get(endpointId) ?? 0) + every - wall);
    const timer = setTimeout(() => {
      this.#countTimers.delete(endpointId);
      this.publish(endpointId);
    }, wait);
    timer.unref?.();
    this.#countTimers.set(endpointId, timer);
  }

  /** Stops pending publications (the runtime stopped). */
  close(): void {
    for (const t of this.#countTimers.values()) clearTimeout(t);
    this.#countTimers.clear();
  }

  #facts(endpointId: string): SharedHealthFacts | undefined {
    const h = this.#o.endpoints.get(endpointId)?.health;
    if (!h) return undefined;
    const now = this.#o.clock.now();
    const v = h.view(now);
    const wall = Date.now();
    const toWall = (until: number) => (until > now ? wall + (until - now) / this.#scale : 0);
    const counts = this.#counts.get(endpointId);
    const fresh = counts && wall - counts.observedAt < MAX_COUNT_AGE_MS / this.#scale ? counts : undefined;
    return {
      cooldownUntil: toWall(v.cooldownUntil),
      disabledUntil: toWall(v.disabledUntil),
      ...(v.disabledReason ? { disabledReason: v.disabledReason } : {}),
      openUntil:
        v.breaker === 'open' && v.openUntil !== null && v.openUntil > now ? toWall(v.openUntil) : null,
      ...(v.breaker === 'open' && v.failedProbes ? { failedProbes: v.failedProbes } : {}),
      ...(fresh?.requests ? { requests: fresh.requests } : {}),
      ...(fresh?.tokens ? { tokens: fresh.tokens } : {}),
      ...(fresh ? { observedAt: fresh.observedAt } : {}),
    };
  }

  #absorb(m: SharedHealthMessage): void {
    const h = this.#o.endpoints.get(m.endpointId)?.health;
    if (!h) return;
    const now = this.#o.clock.now();
    const wall = Date.now();
    const toLocal = (at: number) => (at > wall ? now + (at - wall) * this.#scale : 0);
    const { facts } = m;
    const freshCounts =
      facts.observedAt !== undefined &&
      wall - facts.observedAt < MAX_COUNT_AGE_MS / this.#scale &&
      facts.observedAt - wall <= MAX_CLOCK_SKEW_MS;
    // Another process's counts only ever lower this one's availability: its `limit` never raises a capacity
    // (EndpointHealth.absorbShared keeps the lower of the two).
    const toWindow = (w: SharedWindow | undefined): RateLimitWindow | undefined =>
      w && {
        ...(w.limit !== undefined ? { limit: w.limit } : {}),
        ...(w.remaining !== undefined ? { remaining: w.remaining } : {}),
        ...(w.resetAt !== undefined ? { resetAt: toLocal(w.resetAt) || now } : {}),
      };
    const requests = freshCounts ? toWindow(facts.requests) : undefined;
    const tokens = freshCounts ? toWindow(facts.tokens) : undefined;
    const changed = h.absorbShared(
      {
        cooldownUntil: toLocal(facts.cooldownUntil),
        disabledUntil: toLocal(facts.disabledUntil),
        ...(facts.disabledReason ? { disabledReason: facts.disabledReason } : {}),
        openUntil: facts.openUntil === null ? null : toLocal(facts.openUntil) || null,
        ...(facts.failedProbes ? { failedProbes: facts.failedProbes } : {}),
        ...(requests ? { requests } : {}),
        ...(tokens ? { tokens } : {}),
      },
      now,
    );
    if (changed) this.#o.onAbsorbed?.(m.endpointId);
  }
}
