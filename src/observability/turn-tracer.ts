import {
  type Attributes,
  type Context,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import type { CallRecordEvent } from '../runtime/agent-actors.ts';
import type { Turn } from '../runtime/turn.ts';
import type { SchedulerReport } from '../scheduler/token-scheduler.ts';

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
};

interface OpenTurn {
  readonly span: Span;
  readonly context: Context;
}

/**
 * Makes OpenTelemetry spans of an agent's turns: one span per turn (`invoke_agent {agent}`) with a child span
 * per upstream attempt (`chat {model}`, GenAI attributes), and token waits, cooling and fallback as span events.
 * Span times are on the runtime's clock (wall time, unless a scenario scales time). The turn span is a child of
 * whatever span was active where `ask()` was called. With no tracer provider registered every span is a
 * non-recording one and nothing else is done: tracing off costs one no-op span per turn.
 *
 * @example
 * ```ts
 * const supervisor = createSupervisor(config, { tracing: { tracer: provider.getTracer('my-app') } });
 * ```
 */
export class TurnTracer {
  readonly #tracer: Tracer;
  readonly #content: boolean;
  /** The running turn of each agent whose span records (an agent runs one turn at a time). */
  readonly #open = new Map<string, OpenTurn>();

  constructor(options: TracingOptions = {}) {
    this.#tracer = options.tracer ?? trace.getTracer('breakwater');
    this.#content = options.captureContent === true;
  }

  /** The caller's context, captured where `ask()` is called. */
  capture(): Context {
    return context.active();
  }

  /** A turn starts running (it reached the front of its agent's asks). */
  begin(agent: string, tier: string, parent: Context | undefined, prompt: string, at: number): void {
    const span = this.#tracer.startSpan(
      `invoke_agent ${agent}`,
      {
        kind: SpanKind.INTERNAL,
        startTime: at,
        attributes: {
          'gen_ai.operation.name': 'invoke_agent',
          'gen_ai.agent.name': agent,
          'breakwater.agent': agent,
          'breakwater.tier': tier,
        },
      },
      parent ?? context.active(),
    );
    if (!span.isRecording()) return;
    if (this.#content) span.setAttribute('gen_ai.input.messages', contentJson('user', prompt));
    this.#open.set(agent, { span, context: trace.setSpan(parent ?? context.active(), span) });
  }

  /** One upstream attempt of `record.agent`'s running turn (a probe has no agent and no turn: its own span). */
  attempt(record: CallRecordEvent, chainPosition: number, breakerState: string | undefined): void {
    const open = record.agent !== undefined ? this.#open.get(record.agent) : undefined;
    if (!open && !record.probe) return;
    const attributes: Attributes = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': GENAI_PROVIDER[record.provider] ?? record.provider,
      'gen_ai.request.model': record.requestModel ?? record.model,
      'breakwater.endpoint.id': record.endpointId,
      'breakwater.chain.position': chainPosition,
      'breakwater.tier': record.tier,
    };
    if (breakerState) attributes['breakwater.breaker.state'] = breakerState;
    if (record.probe) attributes['breakwater.probe'] = true;
    if (record.memoized) attributes['breakwater.memoized'] = true;
    if (record.outcome === 'ok') {
      attributes['gen_ai.response.model'] = record.model;
      if (record.usage) {
        attributes['gen_ai.usage.input_tokens'] = record.usage.inputTokens;
        attributes['gen_ai.usage.output_tokens'] = record.usage.outputTokens;
      }
    }
    const parent = open?.context ?? context.active();
    const span = this.#tracer.startSpan(
      `chat ${record.requestModel ?? record.model}`,
      { kind: SpanKind.CLIENT, startTime: record.startedAt, attributes },
      parent,
    );
    if (record.fault) {
      const f = record.fault;
      span.setAttribute('error.type', f.kind);
      span.setAttribute('breakwater.fault.kind', f.kind);
      if (f.status !== undefined) span.setAttribute('http.response.status_code', f.status);
      if (f.retryAfterMs !== undefined) span.setAttribute('breakwater.retry_after_ms', f.retryAfterMs);
      span.setStatus({ code: SpanStatusCode.ERROR, message: scrubSecrets(f.message) });
    }
    span.end(record.at);
    if (open && chainPosition > 0)
      open.span.addEvent(
        'breakwater.fallback',
        { 'breakwater.endpoint.id': record.endpointId, 'breakwater.chain.position': chainPosition },
        record.startedAt,
      );
  }

  /** The ids of `agent`'s running turn span, for log lines (`trace_id`, `span_id`, as OpenTelemetry logs name them). */
  idsOf(agent: string): { trace_id: string; span_id: string } | undefined {
    const open = this.#open.get(agent);
    if (!open) return undefined;
    const { traceId, spanId } = open.span.spanContext();
    return { trace_id: traceId, span_id: spanId };
  }

  /** A scheduler decision about an agent with a running turn: token waits, cooling and denial become span events. */
  report(r: SchedulerReport): void {
    if (r.type !== 'token.granted' && r.type !== 'token.wait' && r.type !== 'token.denied') return;
    const open = this.#open.get(r.agent);
    if (!open) return;
    if (r.type === 'token.granted') {
      if (r.waitedMs > 0)
        open.span.addEvent(
          'breakwater.token_wait',
          { 'breakwater.wait_ms': r.waitedMs, 'breakwater.endpoint.id': r.endpointId },
          r.at,
        );
    } else if (r.type === 'token.wait')
      open.span.addEvent(
        'breakwater.cooling',
        { 'breakwater.endpoint.id': r.endpointId, 'breakwater.cause': r.cause, 'breakwater.until': r.until },
        r.at,
      );
    else open.span.addEvent('breakwater.degrading', { 'breakwater.reason': scrubSecrets(r.reason) }, r.at);
  }

  /** The agent's running turn ended with `turn`. */
  end(agent: string, turn: Turn): void {
    const open = this.#open.get(agent);
    if (!open) return;
    this.#open.delete(agent);
    const { span } = open;
    span.setAttributes({
      'breakwater.turn.outcome': turn.outcome,
      'breakwater.turn.degraded': turn.degraded,
      'breakwater.turn.wait_ms': turn.waitMs,
      'breakwater.turn.attempts': turn.attempts,
      'gen_ai.usage.input_tokens': turn.usage.inputTokens,
      'gen_ai.usage.output_tokens': turn.usage.outputTokens,
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
    span.end(turn.finishedAt);
  }
}

/** A message list in the GenAI conventions' JSON shape, scrubbed of registered secrets. */
function contentJson(role: 'user' | 'assistant', text: string): string {
  return JSON.stringify([{ role, parts: [{ type: 'text', content: scrubSecrets(text) }] }]);
}
