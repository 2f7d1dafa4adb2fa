import { Counter, Histogram, type Registry } from 'prom-client';
import type { RuntimeEvent } from '../core/runtime-event.ts';
import { endpointLabel } from './endpoint-label.ts';

/** The metrics that follow the runtime's events: counters and histograms of calls, tokens, waits and turns. */
export interface EventMetrics {
  readonly calls: Counter;
  readonly callSeconds: Histogram;
  readonly tokensReported: Counter;
  readonly tokensEstimated: Counter;
  readonly usageUnreported: Counter;
  readonly rateLimited: Counter;
  readonly retryAfter: Histogram;
  readonly tokenWait: Histogram;
  readonly turns: Counter;
  readonly degraded: Counter;
}

// Seconds buckets for waits and Retry-After values: from a grant that was immediate to a long cooldown.
const WAIT_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const LATENCY_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120];

/** Registers the event metrics under prefix `p`; `agentLabel` adds an `agent` label to the turn metrics. */
export function createEventMetrics(
  p: string,
  registers: Registry[],
  agentLabel: boolean | undefined,
): EventMetrics {
  const turnLabels = agentLabel ? ['tier', 'outcome', 'agent'] : ['tier', 'outcome'];

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
  return {
    calls,
    callSeconds,
    tokensReported,
    tokensEstimated,
    usageUnreported,
    rateLimited,
    retryAfter,
    tokenWait,
    turns,
    degraded,
  };
}

/** The listener that counts each runtime event into the event metrics. */
export function eventCounter(m: EventMetrics, agentLabel: boolean | undefined): (e: RuntimeEvent) => void {
  const countTokens = (
    endpoint: string,
    type: string,
    reported: number | null,
    estimated: number | undefined,
  ) => {
    if (reported !== null) m.tokensReported.inc({ endpoint, type }, reported);
    // One call reports a count whole or not at all: an estimate beside it is the part it did not report.
    if (reported !== null && estimated === undefined) return;
    m.usageUnreported.inc({ endpoint, type });
    if (estimated !== undefined) m.tokensEstimated.inc({ endpoint, type }, estimated);
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
        m.calls.inc({ endpoint, provider: d.provider, model, outcome: d.outcome, fault_kind: fault });
        m.callSeconds.observe({ endpoint, outcome: d.outcome }, Math.max(0, d.latencyMs) / 1000);
        if (d.faultKind === 'rate_limited') m.rateLimited.inc({ endpoint });
        if (d.retryAfterMs !== undefined) m.retryAfter.observe({ endpoint }, d.retryAfterMs / 1000);
        if (d.usage && !d.memoized) {
          countTokens(endpoint, 'input', d.usage.inputTokens, d.usage.estimated?.inputTokens);
          countTokens(endpoint, 'output', d.usage.outputTokens, d.usage.estimated?.outputTokens);
        }
        return;
      }
      case 'token.granted':
        m.tokenWait.observe({ tier: e.data.tier ?? 'unknown' }, Math.max(0, e.data.waitedMs) / 1000);
        return;
      case 'turn.completed': {
        const labels: Record<string, string> = { tier: e.data.tier, outcome: e.data.outcome };
        if (agentLabel) labels.agent = e.agent;
        m.turns.inc(labels);
        if (e.data.degraded) m.degraded.inc({ tier: e.data.tier });
        return;
      }
      default:
        return;
    }
  };
  return onEvent;
}
