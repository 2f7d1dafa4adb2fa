import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { RuntimeEvent } from '../core/runtime-event.ts';
import type { EndpointHealth } from '../health/endpoint-health.ts';
import type { Supervisor } from '../runtime/supervisor-types.ts';

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

// Seconds buckets for waits and Retry-After values: from a grant that was immediate to a long cooldown.
const WAIT_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const LATENCY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120];
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
const BREAKER_VALUE: Record<string, number> = { closed: 0, halfOpen: 1, open: 2 };

/**
 * The `endpoint` label of an endpoint id. A BYOK key's endpoint (`byok:<session>:<template>:<fingerprint>`) is
 * one per user session and key: its label is `byok:<template>`, so the label set stays bounded by the config
 * and no session id (user data) becomes a label.
 */
export function endpointLabel(id: string): string {
  if (!id.startsWith('byok:')) return id;
  const parts = id.split(':');
  // The session id may itself hold colons: the template is the second-to-last part.
  return parts.length >= 4 ? `byok:${parts[parts.length - 2]}` : 'byok';
}

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
  const turnLabels = options.agentLabel ? ['tier', 'outcome', 'agent'] : ['tier', 'outcome'];

  const calls = new Counter({
    name: `${p}upstream_calls_total`,
    help: 'Upstream LLM calls (attempts), by endpoint, outcome and fault kind (HALF-OPEN probes included).',
    labelNames: ['endpoint', 'provider', 'model', 'outcome', 'fault_kind'],
    registers,
  });
  const callSeconds = new Histogram({
    name: `${p}upstream_call_duration_seconds`,
    help: 'Duration of upstream calls, on the runtime clock.',
    labelNames: ['endpoint', 'outcome'],
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const tokensReported = new Counter({
    name: `${p}upstream_tokens_total`,
    help: 'Tokens of answered upstream calls as the providers reported them (type: input or output).',
    labelNames: ['endpoint', 'type'],
    registers,
  });
  const tokensEstimated = new Counter({
    name: `${p}upstream_tokens_estimated_total`,
    help: "breakwater's estimate (characters / 4) of the tokens of upstream calls whose provider did not report them (answered without usage, or cut after they were sent): an estimate, never measured.",
    labelNames: ['endpoint', 'type'],
    registers,
  });
  const usageUnreported = new Counter({
    name: `${p}upstream_usage_unreported_total`,
    help: 'Upstream calls whose provider did not report this token count (a server that sends none; a call cut after it was sent: a stall, a dropped connection, a stream cut).',
    labelNames: ['endpoint', 'type'],
    registers,
  });
  const rateLimited = new Counter({
    name: `${p}rate_limited_total`,
    help: 'Upstream calls answered with a rate limit (429 or the provider equivalent).',
    labelNames: ['endpoint'],
    registers,
  });
  const retryAfter = new Histogram({
    name: `${p}retry_after_seconds`,
    help: 'Retry-After the provider asked for on a rate limit or overload.',
    labelNames: ['endpoint'],
    buckets: WAIT_BUCKETS,
    registers,
  });
  const tokenWait = new Histogram({
    name: `${p}token_wait_seconds`,
    help: 'Time a request waited for a global concurrency token before its grant.',
    labelNames: ['tier'],
    buckets: WAIT_BUCKETS,
    registers,
  });
  const turns = new Counter({
    name: `${p}turns_total`,
    help: 'Finished turns by tier and outcome (answered, fallback, degraded, failed, cancelled).',
    labelNames: turnLabels,
    registers,
  });
  const degraded = new Counter({
    name: `${p}degraded_answers_total`,
    help: 'Answers served by the degraded layer (cache, decision tree or structured summary).',
    labelNames: ['tier'],
    registers,
  });
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

  const countTokens = (
    endpoint: string,
    type: string,
    reported: number | null,
    estimated: number | undefined,
  ) => {
    if (reported !== null) tokensReported.inc({ endpoint, type }, reported);
    // One call reports a count whole or not at all: an estimate beside it is the part it did not report.
    if (reported !== null && estimated === undefined) return;
    usageUnreported.inc({ endpoint, type });
    if (estimated !== undefined) tokensEstimated.inc({ endpoint, type }, estimated);
  };
  const onEvent = (e: RuntimeEvent): void => {
    switch (e.type) {
      case 'call.attempt': {
        const d = e.data;
        const fault = d.faultKind ?? 'none';
        const endpoint = endpointLabel(e.endpoint);
        // The model asked for (the endpoint's), not the one that answered: `gpt-4o` and `gpt-4o-2024-08-06`
        // stay one series.
        const model = d.requestModel ?? d.model;
        calls.inc({ endpoint, provider: d.provider, model, outcome: d.outcome, fault_kind: fault });
        callSeconds.observe({ endpoint, outcome: d.outcome }, Math.max(0, d.latencyMs) / 1000);
        if (d.faultKind === 'rate_limited') rateLimited.inc({ endpoint });
        if (d.retryAfterMs !== undefined) retryAfter.observe({ endpoint }, d.retryAfterMs / 1000);
        if (d.usage && !d.memoized) {
          countTokens(endpoint, 'input', d.usage.inputTokens, d.usage.estimated?.inputTokens);
          countTokens(endpoint, 'output', d.usage.outputTokens, d.usage.estimated?.outputTokens);
        }
        return;
      }
      case 'token.granted':
        tokenWait.observe({ tier: e.data.tier ?? 'unknown' }, Math.max(0, e.data.waitedMs) / 1000);
        return;
      case 'turn.completed': {
        const labels: Record<string, string> = { tier: e.data.tier, outcome: e.data.outcome };
        if (options.agentLabel) labels.agent = e.agent;
        turns.inc(labels);
        if (e.data.degraded) degraded.inc({ tier: e.data.tier });
        return;
      }
      default:
        return;
    }
  };
  const unsubscribe = supervisor.subscribeEvents(onEvent);
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
