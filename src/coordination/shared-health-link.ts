import type { Clock } from '../clock/clock.ts';
import type { EndpointRegistry } from '../health/endpoint-registry.ts';
import type { CoordinationBackend, SharedHealthFacts, SharedHealthMessage } from './coordination-backend.ts';

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
}

/**
 * Shares endpoint health between the processes of a pool: a fault recorded here (a 429's cooldown, a credit
 * loss's disable, an OPEN breaker) is published at once; what others publish is absorbed, only ever making an
 * endpoint wait longer. Deadlines travel as wall-clock instants and are turned into this runtime's clock on
 * arrival, so a scenario's scaled clock and the system clock agree on "how long from now".
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

  constructor(options: SharedHealthLinkOptions) {
    this.#o = options;
    options.backend.onHealth((m) => {
      if (m.from !== options.processId) this.#absorb(m);
    });
  }

  /** Applies what was published before this process joined. */
  async join(): Promise<void> {
    for (const m of await this.#o.backend.loadHealth()) this.#absorb(m);
  }

  /** Publishes `endpointId`'s current cooldown, disable and breaker deadline, if any lies ahead. */
  publish(endpointId: string): void {
    const h = this.#o.endpoints.get(endpointId)?.health;
    if (!h) return;
    const now = this.#o.clock.now();
    const v = h.view(now);
    const wall = Date.now();
    const toWall = (until: number) => (until > now ? wall + (until - now) : 0);
    const facts: SharedHealthFacts = {
      cooldownUntil: toWall(v.cooldownUntil),
      disabledUntil: toWall(v.disabledUntil),
      ...(v.disabledReason ? { disabledReason: v.disabledReason } : {}),
      openUntil:
        v.breaker === 'open' && v.openUntil !== null && v.openUntil > now ? toWall(v.openUntil) : null,
    };
    if (facts.cooldownUntil === 0 && facts.disabledUntil === 0 && facts.openUntil === null) return;
    this.#o.backend.publishHealth(endpointId, facts).catch((e: unknown) => this.#o.onError?.(e));
  }

  #absorb(m: SharedHealthMessage): void {
    const h = this.#o.endpoints.get(m.endpointId)?.health;
    if (!h) return;
    const now = this.#o.clock.now();
    const wall = Date.now();
    const toLocal = (at: number) => (at > wall ? now + (at - wall) : 0);
    const changed = h.absorbShared(
      {
        cooldownUntil: toLocal(m.facts.cooldownUntil),
        disabledUntil: toLocal(m.facts.disabledUntil),
        ...(m.facts.disabledReason ? { disabledReason: m.facts.disabledReason } : {}),
        openUntil: m.facts.openUntil === null ? null : toLocal(m.facts.openUntil) || null,
      },
      now,
    );
    if (changed) this.#o.onAbsorbed?.(m.endpointId);
  }
}
