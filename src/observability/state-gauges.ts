import { Gauge, type Registry } from 'prom-client';
import type { EndpointHealth } from '../health/endpoint-health.ts';
import type { Supervisor } from '../runtime/supervisor-types.ts';
import { endpointLabel } from './endpoint-label.ts';

const BREAKER_VALUE: Record<string, number> = { closed: 0, halfOpen: 1, open: 2 };

/**
 * Registers the gauges of state under prefix `p` (tokens held and waiting, breakers, cooldowns, disabled keys):
 * each is read from the supervisor when scraped, so it is exact at that instant and costs nothing between scrapes.
 */
export function registerStateGauges(
  p: string,
  registers: Registry[],
  supervisor: Pick<Supervisor, 'tokens' | 'health' | 'clock'>,
): void {
  new Gauge({
    name: `${p}tokens_limit`,
    help: 'Global concurrency tokens (the cap on upstream calls in flight).',
    registers,
    collect() {
      this.set(supervisor.tokens().limit);
    },
  });
  new Gauge({
    name: `${p}tokens_held`,
    help: 'Global concurrency tokens held, by tier (probe = HALF-OPEN health probes).',
    labelNames: ['tier'],
    registers,
    collect() {
      this.reset();
      const byTier = new Map<string, number>();
      for (const h of supervisor.tokens().holders) byTier.set(h.tier, (byTier.get(h.tier) ?? 0) + 1);
      for (const [tier, n] of byTier) this.set({ tier }, n);
    },
  });
  new Gauge({
    name: `${p}tokens_waiting`,
    help: 'Requests waiting for a global concurrency token, by tier.',
    labelNames: ['tier'],
    registers,
    collect() {
      this.reset();
      const byTier = new Map<string, number>();
      for (const q of supervisor.tokens().queue) byTier.set(q.tier, (byTier.get(q.tier) ?? 0) + 1);
      for (const [tier, n] of byTier) this.set({ tier }, n);
    },
  });
  new Gauge({
    name: `${p}breaker_state`,
    help: 'Circuit breaker state per endpoint: 0 closed, 1 half-open, 2 open.',
    labelNames: ['endpoint'],
    registers,
    collect() {
      this.reset();
      setMax(this, supervisor.health(), (h) => BREAKER_VALUE[h.breaker] ?? 0);
    },
  });
  new Gauge({
    name: `${p}endpoint_cooldown_remaining_seconds`,
    help: 'Seconds until an endpoint may be called again (cooldown after a 429/overload, or an open breaker).',
    labelNames: ['endpoint'],
    registers,
    collect() {
      this.reset();
      const now = supervisor.clock.now();
      setMax(
        this,
        supervisor.health(),
        (h) => Math.max(0, Math.max(h.cooldownUntil, h.openUntil ?? 0) - now) / 1000,
      );
    },
  });
  new Gauge({
    name: `${p}endpoint_disabled`,
    help: 'An endpoint disabled for credit or auth (1) until its time, else 0.',
    labelNames: ['endpoint'],
    registers,
    collect() {
      this.reset();
      const now = supervisor.clock.now();
      setMax(this, supervisor.health(), (h) => (h.disabledUntil > now ? 1 : 0));
    },
  });
}

/** Sets a per-endpoint gauge: endpoints that share a label (BYOK keys of one template) show the largest value. */
function setMax(
  gauge: Gauge<'endpoint'>,
  health: readonly EndpointHealth[],
  value: (h: EndpointHealth) => number,
): void {
  const byLabel = new Map<string, number>();
  for (const h of health) {
    const label = endpointLabel(h.id);
    byLabel.set(label, Math.max(byLabel.get(label) ?? Number.NEGATIVE_INFINITY, value(h)));
  }
  for (const [endpoint, v] of byLabel) gauge.set({ endpoint }, v);
}
