import { Registry } from 'prom-client';
import type { Supervisor } from '../runtime/supervisor-types.ts';
import { createEventMetrics, eventCounter } from './event-metrics.ts';
import { registerStateGauges } from './state-gauges.ts';

export { endpointLabel } from './endpoint-label.ts';

/** Options of {@link createBreakwaterMetrics}. */
export interface BreakwaterMetricsOptions {
  /**
   * The registry the metrics are registered in: pass your app's own to serve them on your `/metrics`, or merge
   * ours with `Registry.merge([yours, metrics.registry])`. Default: a new registry of breakwater's metrics only.
   */
  readonly registry?: Registry;
  /** Prefix of every metric name. Default `breakwater_`. */
  readonly prefix?: string;
  /**
   * Add an `agent` label to the turn metrics. Off by default: agent names are user data and, with many agents, an
   * unbounded label set.
   */
  readonly agentLabel?: boolean;
}

/** breakwater's metrics for one supervisor, fed by its runtime events and read from its state at scrape time. */
export interface BreakwaterMetrics {
  readonly registry: Registry;
  /** Stops listening to the supervisor and removes its metrics from the registry (so another may register). */
  detach(): void;
}

/** Every metric this module registers, without the prefix. */
const METRIC_NAMES = [
  'upstream_calls_total',
  'upstream_call_duration_seconds',
  'upstream_tokens_total',
  'upstream_tokens_estimated_total',
  'upstream_usage_unreported_total',
  'rate_limited_total',
  'retry_after_seconds',
  'token_wait_seconds',
  'turns_total',
  'degraded_answers_total',
  'tokens_limit',
  'tokens_held',
  'tokens_waiting',
  'breaker_state',
  'endpoint_cooldown_remaining_seconds',
  'endpoint_disabled',
] as const;

/**
 * Prometheus metrics of a supervisor (prom-client). Counters and histograms follow the runtime's events; gauges
 * of state (tokens held and waiting, breakers, cooldowns, disabled keys) are read from the supervisor when
 * scraped, so they are exact at that instant and cost nothing between scrapes. Label sets are bounded: endpoint
 * ids and tiers come from the config, outcomes and fault kinds are enums; no prompt, key or agent name (unless
 * `agentLabel`) is ever a label.
 *
 * Names: `breakwater_upstream_calls_total{endpoint,provider,model,outcome,fault_kind}`,
 * `breakwater_upstream_call_duration_seconds`, `breakwater_rate_limited_total{endpoint}`,
 * `breakwater_retry_after_seconds{endpoint}`, `breakwater_tokens_limit`, `breakwater_tokens_held{tier}`,
 * `breakwater_tokens_waiting{tier}`, `breakwater_token_wait_seconds{tier}`,
 * `breakwater_breaker_state{endpoint}` (0 closed, 1 half-open, 2 open),
 * `breakwater_endpoint_cooldown_remaining_seconds{endpoint}`, `breakwater_endpoint_disabled{endpoint}`,
 * `breakwater_turns_total{tier,outcome}`, `breakwater_degraded_answers_total{tier}`,
 * `breakwater_upstream_tokens_total{endpoint,type}` (tokens the providers reported, `type` input or output),
 * `breakwater_upstream_tokens_estimated_total{endpoint,type}` (breakwater's estimate of the counts a provider did not
 * report: a metric of its own, so summing the measured one never adds a guess),
 * `breakwater_upstream_usage_unreported_total{endpoint,type}` (calls whose count was not reported: answered without
 * it, or cut after they were sent).
 *
 * @example
 * ```ts
 * const metrics = createBreakwaterMetrics(supervisor);
 * http.createServer(async (req, res) => {
 *   res.setHeader('content-type', metrics.registry.contentType);
 *   res.end(await metrics.registry.metrics());
 * }).listen(9464, '127.0.0.1');
 * ```
 */
export function createBreakwaterMetrics(
  supervisor: Pick<Supervisor, 'subscribeEvents' | 'tokens' | 'health' | 'clock'>,
  options: BreakwaterMetricsOptions = {},
): BreakwaterMetrics {
  const registry = options.registry ?? new Registry();
  const p = options.prefix ?? 'breakwater_';
  const registers = [registry];
  if (registry.getSingleMetric(`${p}upstream_calls_total`))
    throw new Error(
      `this registry already holds breakwater's metrics (prefix "${p}") of another supervisor: detach() that one first, or give this one another prefix or registry`,
    );
  const metrics = createEventMetrics(p, registers, options.agentLabel);
  registerStateGauges(p, registers, supervisor);
  const unsubscribe = supervisor.subscribeEvents(eventCounter(metrics, options.agentLabel));
  let detached = false;
  const detach = () => {
    if (detached) return;
    detached = true;
    unsubscribe();
    // A restarted supervisor (or another) can register in the same registry afterwards.
    for (const name of METRIC_NAMES) registry.removeSingleMetric(`${p}${name}`);
  };
  return { registry, detach };
}
