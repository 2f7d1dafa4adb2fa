import type { Clock } from '../clock/clock.ts';
import { classifyError } from './faults/classify-error.ts';
import { EngineFaultError, type Fault } from '../core/fault.ts';
import { readRateLimitState } from './wire/rate-limit-headers.ts';
import { DEFAULT_MAX_RETRY_AFTER_MS } from './wire/retry-after-cap.ts';
import { callAbortOf } from '../core/call-abort.ts';
import type { CallCredential } from './call-credential.ts';
import type { ParsedEndpointConfig } from './endpoint-config.ts';
import type {
  ChatMessage,
  EndpointDescriptor,
  EngineRequest,
  EngineResult,
  RateLimitState,
  RateLimitWindow,
  StopReason,
  ToolCall,
} from '../core/engine-types.ts';
import { estimateTokens, usageOf } from '../core/token-usage.ts';
import {
  beginTimedCall,
  endTimedCall,
  runTimedCall,
  type TimedFetchOptions,
  timedFetchOptions,
} from './timed-fetch.ts';

/**
 * The token counts a response carried: a count the provider did not send (a stream cut before its usage, a
 * compatible server without `stream_options`, a proxy that strips it) is absent, never filled in here.
 */
export interface ReportedCounts {
  readonly inputTokens?: number;
  readonly outputTokens?: number;
}

/** The counts a response carried, each only when it is a number (`null`/absent on the wire: not reported). */
export function countsOf(inputTokens: unknown, outputTokens: unknown): ReportedCounts {
  return {
    ...(typeof inputTokens === 'number' ? { inputTokens } : {}),
    ...(typeof outputTokens === 'number' ? { outputTokens } : {}),
  };
}

/** What a provider-specific engine extracts from its SDK's response. */
export interface ProviderOutcome {
  readonly text: string;
  readonly toolCalls: readonly ToolCall[];
  readonly stopReason: StopReason;
  /** Only what the provider reported; the engine adds its estimate of the rest, apart ({@link Usage}). */
  readonly usage: ReportedCounts;
  readonly model: string;
  /** A request id found in the body (Gemini `responseId`); headers are read here otherwise. */
  readonly requestId?: string;
}

/** What every provider engine shares: its validated config, identity, clocks and sealed key. */
export interface EngineContext {
  readonly config: ParsedEndpointConfig;
  readonly endpoint: EndpointDescriptor;
  /** The run's clock: deadlines, latencies, and where reset times are placed. */
  readonly clock: Clock;
  /**
   * Wall-clock epoch ms (`Date.now`): what the instants a provider sends (reset times, HTTP dates) are
   * measured against. Default `Date.now`; a test injects its own.
   */
  readonly wallNow?: () => number;
  /** The endpoint's key, sealed; the SDK client holds only its marker. Undefined for a keyless server. */
  readonly credential?: CallCredential | undefined;
  /** Run-clock ms per real ms of the waits the provider sends (see `CreateEngineOptions.wireScale`). Default 1. */
  readonly wireScale?: number;
  /** Epoch ms whose calendar day per-day quotas count (see `CreateEngineOptions.quotaDayNow`). Default: `wallNow`. */
  readonly quotaDayNow?: () => number;
}

/** The header every call carries so the provider (and the emulator) can deduplicate retries. */
export const IDEMPOTENCY_HEADER = 'Idempotency-Key';

/**
 * Runs one provider call under the adapter's deadlines and turns its outcome into an
 * {@link EngineResult}, or any failure into an {@link EngineFaultError}. `send` is given the request's
 * `fetchOptions` that carry the call to `timedFetch`: with `carried`, `send` passes them to its SDK (which
 * must hand them to its fetch as they are) and no `AsyncLocalStorage` context is made; without, the call
 * runs in one ({@link runTimedCall}) and `send` may ignore them.
 */
export async function runEngineCall(
  ctx: EngineContext,
  request: EngineRequest,
  send: (touch: () => void, fetchOptions: TimedFetchOptions) => Promise<ProviderOutcome>,
  streamed = false,
  carried = false,
): Promise<EngineResult> {
  const { clock, config, endpoint } = ctx;
  const wallNow = ctx.wallNow ?? Date.now;
  const startedAt = clock.now();
  const caller = callAbortOf(request);
  const scale = ctx.wireScale ?? 1;
  // The deadlines wait for the endpoint, in its own time: a real server's 60 s for its headers are 60 real s, so
  // `scale` times as many ms of a scaled run's clock (else at timeScale 15 it would get 4 real s to answer).
  const call = beginTimedCall(
    clock,
    config.headersTimeoutMs * scale,
    config.idleTimeoutMs * scale,
    caller,
    wallNow,
    ctx.credential,
    scale,
  );
  // The cap is on the run's clock (what an endpoint may be parked for there): in the wire's own ms it is the cap
  // divided by the scale, so a wait scaled afterwards never passes it.
  const maxRetryAfterMs = (config.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS) / scale;
  call.streamed = streamed;
  // A stream's reader calls it per event: the body is alive (the idle deadline counts from the last one).
  const touch = () => {
    call.lastActivity = clock.now();
  };
  try {
    const fetchOptions = timedFetchOptions(call);
    const outcome = await (carried
      ? send(touch, fetchOptions)
      : runTimedCall(call, () => send(touch, fetchOptions)));
    const now = clock.now();
    const headers = call.headers ?? new Headers();
    const requestId = headers.get('request-id') ?? headers.get('x-request-id') ?? outcome.requestId;
    const result: EngineResult = {
      text: outcome.text,
      toolCalls: Object.freeze(outcome.toolCalls.map((c) => Object.freeze(c))),
      stopReason:
        outcome.toolCalls.length > 0 && outcome.stopReason === 'end_turn' ? 'tool_use' : outcome.stopReason,
      usage: usageOf(outcome.usage.inputTokens, outcome.usage.outputTokens, {
        inputTokens: estimateRequestInput(request),
        outputTokens: estimateAnswerOutput(outcome),
      }),
      endpoint,
      model: outcome.model,
      ...(requestId ? { requestId } : {}),
      // Reset instants are wall-clock: read them against the wall time the headers arrived at, and
      // place them on the run's clock (a scenario's clock may be months away from the wall).
      rateLimit: onRunClock(
        readRateLimitState(config.provider, headers, call.clockAtHeaders ?? now, {
          wallNow: call.wallAtHeaders ?? wallNow(),
          maxResetInMs: maxRetryAfterMs,
        }),
        call.clockAtHeaders ?? now,
        scale,
      ),
      latencyMs: now - startedAt,
    };
    return Object.freeze(result);
  } catch (err) {
    throw new EngineFaultError(
      faultOnRunClock(
        classifyError(err, {
          provider: config.provider,
          ...(endpoint.flavor ? { flavor: endpoint.flavor } : {}),
          endpointId: config.id,
          // Instants on the wire are wall-clock: measured from when the response arrived, not the run's clock.
          now: call.wallAtHeaders ?? wallNow(),
          // A per-day quota lasts until the end of the endpoint's own day: the run's for the emulator on its clock.
          ...(ctx.quotaDayNow ? { dayNow: ctx.quotaDayNow() } : {}),
          maxRetryAfterMs,
          ...(call.timedOut ? { timedOut: call.timedOut } : {}),
          callerAborted: caller?.aborted === true,
          ...(call.headers ? { headers: call.headers } : {}),
          ...(call.bodyText !== undefined ? { bodyText: call.bodyText } : {}),
        }),
        scale,
      ),
    );
  } finally {
    endTimedCall(call);
  }
}

/**
 * A response's rate-limit state with its waits on the run's clock: the provider's durations are real ms, so on a
 * clock running `scale` times the wall each reset lies `scale` times as far from `now` (1: returned as it is).
 */
function onRunClock(state: RateLimitState, now: number, scale: number): RateLimitState {
  if (scale === 1) return Object.freeze(state);
  const window = (w: RateLimitWindow | undefined) =>
    w && w.resetAt !== undefined ? { ...w, resetAt: now + Math.round((w.resetAt - now) * scale) } : w;
  const out: Record<string, unknown> = {};
  for (const k of ['requests', 'tokens', 'inputTokens', 'outputTokens'] as const)
    if (state[k]) out[k] = window(state[k]);
  if (state.retryAfterMs !== undefined) out.retryAfterMs = Math.round(state.retryAfterMs * scale);
  if (state.cappedFromMs !== undefined) out.cappedFromMs = Math.round(state.cappedFromMs * scale);
  return Object.freeze(out as RateLimitState);
}

/** A fault's waits (retry-after, a per-day disable) on the run's clock: see {@link onRunClock}. */
function faultOnRunClock(fault: Fault, scale: number): Fault {
  if (scale === 1) return fault;
  const on = (ms: number) => Math.round(ms * scale);
  return Object.freeze({
    ...fault,
    ...(fault.retryAfterMs !== undefined ? { retryAfterMs: on(fault.retryAfterMs) } : {}),
    ...(fault.retryAfterCappedFromMs !== undefined
      ? { retryAfterCappedFromMs: on(fault.retryAfterCappedFromMs) }
      : {}),
    ...(fault.disableForMs !== undefined ? { disableForMs: on(fault.disableForMs) } : {}),
  });
}

/** breakwater's estimate of a request's input tokens (its text ÷ 4): what an unreported input count is taken as. */
export function estimateRequestInput(request: EngineRequest): number {
  let chars = (request.system?.length ?? 0) + (request.prefill?.length ?? 0);
  for (const m of request.messages) {
    if (m.role === 'tool_call') chars += JSON.stringify(m.call.arguments).length + m.call.name.length;
    else chars += m.content.length;
  }
  if (request.tools) chars += JSON.stringify(request.tools).length;
  return estimateTokens(chars);
}

/** breakwater's estimate of an answer's output tokens (its text and tool calls ÷ 4). */
function estimateAnswerOutput(outcome: ProviderOutcome): number {
  let chars = outcome.text.length;
  for (const c of outcome.toolCalls) chars += c.name.length + JSON.stringify(c.arguments).length;
  return estimateTokens(chars);
}

/**
 * A stream that broke after its 200: the body ended without the provider's end marker, or the SDK's stream parser
 * failed on what arrived (a cut, a truncated last chunk). The classifier reads it (by its name) as `network`, or
 * as `timeout` / `cancelled` when our deadline or the caller's signal cut it.
 */
export class StreamCutError extends Error {
  readonly code = 'STREAM_CUT' as const;
  constructor(detail: string, options?: { cause?: unknown }) {
    super(`stream terminated before its end (${detail})`, options);
    this.name = 'StreamCutError';
  }
}

/**
 * An error thrown while reading a stream, as the classifier should see it: the provider's own errors (an HTTP
 * status, or an error event with a body) pass; anything else (a socket cut, a parser choking on a cut chunk, an
 * abort) is a {@link StreamCutError}.
 */
export function streamFailure(err: unknown): unknown {
  if (err && typeof err === 'object') {
    const e = err as { status?: unknown; error?: unknown };
    if (typeof e.status === 'number' || (e.error !== undefined && e.error !== null)) return err;
  }
  const text = err instanceof Error ? err.message : String(err);
  return new StreamCutError(text.slice(0, 120), { cause: err });
}

/** The request's messages with its prefill (if any) as the last assistant message. */
export function messagesWithPrefill(request: EngineRequest): readonly ChatMessage[] {
  return request.prefill
    ? [...request.messages, { role: 'assistant', content: request.prefill }]
    : request.messages;
}

/** Headers that carry the idempotency key on one call. */
export function idempotencyHeaders(request: EngineRequest): Record<string, string> {
  return { [IDEMPOTENCY_HEADER]: request.idempotencyKey };
}

/**
 * Parses tool-call arguments sent as a JSON string (OpenAI). Malformed or non-object JSON is kept
 * as `{ _raw }` so a bad model output never crashes the call; an empty string means no arguments.
 */
export function parseToolArguments(raw: string | undefined | null): Readonly<Record<string, unknown>> {
  if (raw === undefined || raw === null || raw.trim() === '') return {};
  try {
    const value: unknown = JSON.parse(raw);
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // fall through
  }
  return { _raw: raw };
}

/** The inverse of {@link parseToolArguments}: a `{ _raw }` call is sent back exactly as it came. */
export function serializeToolArguments(args: Readonly<Record<string, unknown>>): string {
  const keys = Object.keys(args);
  if (keys.length === 1 && keys[0] === '_raw' && typeof args._raw === 'string') return args._raw;
  return JSON.stringify(args);
}
