import type { Clock } from '../../clock/clock.ts';
import type { RuntimeEventListener } from '../../core/runtime-event.ts';
import type { EndpointHealth } from '../../health/endpoint-health.ts';
import type { Supervisor } from '../../runtime/supervisor-types.ts';
import type { LogLiveSource } from '../../viz/log-live-source.ts';

/**
 * What `createBreakwaterMetrics` reads of a supervisor, for a run spread over worker processes: its counters follow
 * every worker's events from the run's log, and its gauges (tokens held and waiting, breakers, cooldowns,
 * disables) are read at scrape time from the state folded from that log — the whole run, not one process's part.
 *
 * @example
 * ```ts
 * const live = createLogLiveSource(tail, { runId, limit });
 * createBreakwaterMetrics(runLogMetricsSource(tail, live, clock), { registry });
 * ```
 */
export function runLogMetricsSource(
  feed: { subscribeEvents(listener: RuntimeEventListener): () => void },
  live: Pick<LogLiveSource, 'state'>,
  clock: Clock,
): Pick<Supervisor, 'subscribeEvents' | 'tokens' | 'health' | 'clock'> {
  return {
    clock,
    subscribeEvents: (listener) => feed.subscribeEvents(listener),
    tokens() {
      const { tokens, agents } = live.state();
      const tierOf = (holder: string) =>
        holder.startsWith('probe:') ? 'probe' : (agents[holder]?.tier ?? 'unknown');
      return {
        limit: tokens.limit ?? 0,
        held: tokens.holders.length,
        holders: tokens.holders.map((h) => ({
          holder: h.holder,
          endpointId: h.endpoint,
          tier: tierOf(h.holder),
        })),
        queue: Object.entries(tokens.queue).flatMap(([tier, waiting]) =>
          waiting.map((agent) => ({ agent, tier })),
        ),
      };
    },
    health() {
      // The metrics read these fields only; the rest of a live EndpointHealth (buckets, AIMD) is not in the log.
      return Object.values(live.state().endpoints).map(
        (e) =>
          ({
            id: e.id,
            breaker: e.breaker,
            openUntil: e.openUntil,
            cooldownUntil: e.cooldownUntil,
            disabledUntil: e.disabledUntil,
            inFlight: e.inFlight,
          }) as unknown as EndpointHealth,
      );
    },
  };
}
