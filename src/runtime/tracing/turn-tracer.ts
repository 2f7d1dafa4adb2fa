import {
  type Attributes,
  type Context,
  context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { Usage } from '../../core/engine-types.ts';
import { isWhole, usageSource } from '../../core/token-usage.ts';
import { scrubSecrets } from '../../redact/secret-scrubber.ts';
import type { CallRecordEvent } from '../../core/call-memo.ts';
import type { Turn } from '../../core/turn.ts';
import type { SchedulerReport } from '../../scheduler/token-scheduler.ts';

/** Options of tracing (`createSupervisor(config, { tracing })`). */
export interface TracingOptions {
  /**
   * The tracer spans are made with. Default: `trace.getTracer('breakwater')` from `@opentelemetry/api`: a no-op
   * until the application registers a tracer provider (breakwater never installs an SDK of its own).
   */
  readonly tracer?: Tracer;
  /**
   * Record prompts and answers on the spans (`gen_ai.input.messages`, `gen_ai.output.messages`), scrubbed of
   * registered secrets. Default `false`: spans carry sizes, models and outcomes, never text.
   */
  readonly captureContent?: boolean;
}

/** `gen_ai.provider.name` of the OpenTelemetry GenAI conventions for breakwater's provider kinds. */
const GENAI_PROVIDER: Record<string, string> = {
  openai: 'openai',
  anthropic: 'anthropic',
  gemini: 'gcp.gemini',
  // vLLM, Ollama and other servers of the OpenAI API: the conventions name the API's owner.
  'openai-compatible': 'openai',
};

interface OpenTurn {
  readonly span: Span;
  readonly context: Context;
}

/** Ended turns kept for the attempts that report after their turn ended (a call cut by a cancel or a stop). */
const ENDED_KEPT = 256;

/**
 * Makes OpenTelemetry spans of an agent's turns: one span per turn (`invoke_agent {agent}`) with a child span
 * per upstream attempt (`chat {model}`, GenAI attributes), and token waits, cooling and fallback as span events.
 * Span times are wall-clock times, whatever clock the run is on (a scenario's scaled clock included). The turn
 * span is a child of whatever span was active where `ask()` was called; a HALF-OPEN probe is a root span.
 *
 * @example
 * ```ts
 * const supervisor = createSupervisor(config, { tracing: { tracer: provider.getTracer('my-app') } });
 * ```
 */
export class TurnTracer {
  readonly #tracer: Tracer;
  readonly #content: boolean;
  /** Turns running now, by turn id (recording spans only). */
  readonly #open = new Map<string, OpenTurn>();
  /** The agent each open turn belongs to, for the scheduler's reports (which name the agent, not the turn). */
  readonly #byAgent = new Map<string, string>();
  /** Recently ended turns, oldest first: a cut call reports after its turn ended and still belongs to it. */
  readonly #ended = new Map<string, OpenTurn>();

  constructor(options: TracingOptions = {}) {
    this.#tracer = options.tracer ?? trace.getTracer('breakwater');
    this.#content = options.captureContent === true;
  }

  /** The caller's context, captured where `ask()` is called. */
  capture(): Context {
    return context.active();
  }

  /** A turn starts running (it reached the front of its agent's asks, or was restored mid-way). */
  begin(turnId: string, agent: string, tier: string, parent: Context | undefined, prompt: string): void {
    const base = parent ?? ROOT_CONTEXT;
    const span = this.#tracer.startSpan(
      `invoke_agent ${agent}`,
      {
        kind: SpanKind.INTERNAL,
        startTime: Date.now(),
        attributes: {
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': agent,
          'breakwater.agent': agent,
          'breakwater.tier': tier,
          'breakwater.turn.id': turnId,
        },
      },
      base,
    );
    if (!span.isRecording()) return;
    if (this.#content) span.setAttribute('gen_ai.input.messages', contentJson('user', prompt));
    this.#open.set(turnId, { span, context: trace.setSpan(base, span) });
    this.#byAgent.set(agent, turnId);
  }

  /** The ids of a running turn's span, for log lines (`trace_id`, `span_id`, as OpenTelemetry logs name them). */
  idsOf(turnId: string): { trace_id: string; span_id: string } | undefined {
    const open = this.#open.get(turnId) ?? this.#ended.get(turnId);
    if (!open) return undefined;
    const { traceId, spanId } = open.span.spanContext();
    return { trace_id: traceId, span_id: spanId };
  }

  /** One upstream attempt: a child of its turn's span (even one that ended meanwhile); a probe is a root span. */
  attempt(record: CallRecordEvent, breakerState: string | undefined): void {
    const turn =
      record.turnId !== undefined
        ? (this.#open.get(record.turnId) ?? this.#ended.get(record.turnId))
        : undefined;
    if (!turn && !record.probe) return;
    const position = record.chainPosition ?? 0;
    const attributes: Attributes = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': GENAI_PROVIDER[record.provider] ?? record.provider,
      'gen_ai.request.model': record.requestModel ?? record.model,
      'breakwater.endpoint.id': record.endpointId,
      'breakwater.chain.position': position,
      'breakwater.tier': record.tier,
    };
    if (breakerState) attributes['breakwater.breaker.state'] = breakerState;
    if (record.probe) attributes['breakwater.probe'] = true;
    if (record.outcome === 'ok') attributes['gen_ai.response.model'] = record.model;
    // A failed attempt carries usage only when it was cut after it was sent: unknown, its estimate apart.
    if (record.usage) Object.assign(attributes, usageAttributes(record.usage));
    const end = Date.now();
    const span = this.#tracer.startSpan(
      `chat ${record.requestModel ?? record.model}`,
      { kind: SpanKind.CLIENT, startTime: Math.min(end, record.wallStartedAt ?? end), attributes },
      turn?.context ?? ROOT_CONTEXT,
    );
    if (record.fault) {
      const f = record.fault;
      span.setAttribute('error.type', f.kind);
      span.setAttribute('breakwater.fault.kind', f.kind);
      if (f.status !== undefined) span.setAttribute('http.response.status_code', f.status);
      if (f.retryAfterMs !== undefined) span.setAttribute('breakwater.retry_after_ms', f.retryAfterMs);
      span.setStatus({ code: SpanStatusCode.ERROR, message: scrubSecrets(f.message) });
    }
    span.end(end);
    if (turn && position > 0)
      turn.span.addEvent(
        'breakwater.fallback',
        { 'breakwater.endpoint.id': record.endpointId, 'breakwater.chain.position': position },
        record.wallStartedAt ?? end,
      );
  }

  /** A scheduler decision about an agent with a running turn: token waits, cooling and denial become span events. */
  report(r: SchedulerReport): void {
    if (r.type !== 'token.granted' && r.type !== 'token.wait' && r.type !== 'token.denied') return;
    const turnId = this.#byAgent.get(r.agent);
    const open = turnId !== undefined ? this.#open.get(turnId) : undefined;
    if (!open) return;
    const now = Date.now();
    if (r.type === 'token.granted') {
      if (r.waitedMs > 0)
        open.span.addEvent(
          'breakwater.token_wait',
          { 'breakwater.wait_ms': r.waitedMs, 'breakwater.endpoint.id': r.endpointId },
          now,
        );
    } else if (r.type === 'token.wait')
      open.span.addEvent(
        'breakwater.cooling',
        {
          'breakwater.endpoint.id': r.endpointId,
          'breakwater.cause': r.cause,
          'breakwater.until_ms': r.until - r.at,
        },
        now,
      );
    else open.span.addEvent('breakwater.degrading', { 'breakwater.reason': scrubSecrets(r.reason) }, now);
  }

  /** A running turn ended with `turn`. */
  end(turn: Turn): void {
    const open = this.#open.get(turn.turnId);
    if (!open) return;
    this.#open.delete(turn.turnId);
    if (this.#byAgent.get(turn.agent) === turn.turnId) this.#byAgent.delete(turn.agent);
    this.#ended.set(turn.turnId, open);
    if (this.#ended.size > ENDED_KEPT) this.#ended.delete(this.#ended.keys().next().value as string);
    const { span } = open;
    span.setAttributes({
      'breakwater.turn.outcome': turn.outcome,
      'breakwater.turn.degraded': turn.degraded,
      'breakwater.turn.wait_ms': turn.waitMs,
      'breakwater.turn.attempts': turn.attempts,
      ...usageAttributes(turn.usage),
    });
    if (turn.endpointId) span.setAttribute('breakwater.endpoint.id', turn.endpointId);
    if (turn.degradedReason)
      span.setAttribute('breakwater.degraded.reason', scrubSecrets(turn.degradedReason));
    if (this.#content && turn.answer.text)
      span.setAttribute('gen_ai.output.messages', contentJson('assistant', turn.answer.text));
    if (turn.outcome === 'failed') {
      const last = turn.faults[turn.faults.length - 1];
      span.setAttribute('error.type', last?.kind ?? 'internal');
      span.setStatus({ code: SpanStatusCode.ERROR, message: scrubSecrets(turn.error ?? 'failed') });
    }
    span.end(Date.now());
  }
}

/**
 * A usage as span attributes. `gen_ai.usage.*` carry only counts the provider reported whole: the GenAI conventions
 * ask for the provider's numbers, and a tool summing them must not add a guess or take a part for the whole. A count
 * not reported is left out, and `breakwater.usage.source` says so (`partial`, `unknown`); of a count reported in part
 * (a turn whose cut call reported nothing and whose next call did), the reported part goes under
 * `breakwater.usage.reported_*`; breakwater's estimate of what was not reported under `breakwater.usage.estimated_*`,
 * names no GenAI tool reads as measured.
 */
export function usageAttributes(u: Usage): Attributes {
  // Derived from the counts: a memoized result stored before usage could be unknown has no `source`.
  const out: Attributes = { 'breakwater.usage.source': usageSource(u) };
  for (const [count, name] of [
    ['inputTokens', 'input_tokens'],
    ['outputTokens', 'output_tokens'],
  ] as const) {
    const n = u[count];
    if (isWhole(u, count)) out[`gen_ai.usage.${name}`] = n!;
    else {
      if (n !== null) out[`breakwater.usage.reported_${name}`] = n;
      const est = u.estimated?.[count];
      if (est !== undefined) out[`breakwater.usage.estimated_${name}`] = est;
    }
  }
  return out;
}

/** A message list in the GenAI conventions' JSON shape, scrubbed of registered secrets. */
function contentJson(role: 'user' | 'assistant', text: string): string {
  return JSON.stringify([{ role, parts: [{ type: 'text', content: scrubSecrets(text) }] }]);
}
