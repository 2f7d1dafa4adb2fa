import type { CallEngineInput, PartialAnswer } from '../../machines/agent.types.ts';
import {
  canContinuePrefix,
  type EndpointDescriptor,
  type EngineResult,
  type StreamSink,
} from '../core/engine-types.ts';
import type { Fault } from '../core/fault.ts';
import type { StreamSource, TurnStreamSink } from './turn-stream.ts';

/**
 * One attempt of a streamed step, between the engine's stream and the caller's events. It decides how the attempt
 * relates to the text the caller already holds (a partial answer kept from a failed attempt):
 * - none: `start`;
 * - the endpoint can continue a prefix (Anthropic, vLLM): `continuation`, the partial answer sent as the
 *   assistant prefill (trailing whitespace dropped: Anthropic refuses a prefill that ends with it), and the final
 *   text is that prefix + what this endpoint adds;
 * - it cannot (OpenAI chat, Gemini, other compatible servers): `restart`, the earlier text withdrawn.
 * The `endpoint` event is announced with this attempt's first delta, never before: a fault before the first chunk
 * shows the caller only a `fault`, and the partial answer stays as it was for the next attempt.
 */
export interface StreamAttempt {
  /** The prefill to send (a continuation), or undefined. */
  readonly prefill: string | undefined;
  /**
   * The prefill's estimated tokens (characters / 4, at least 1; 0 without one): the failed attempt that produced
   * it reported no usage. The continuation asks for that many fewer output tokens (a provider counts only new
   * ones), so the step stays within its `maxTokens`.
   */
  readonly prefixTokens: number;
  /** The engine's sink: deltas go to the caller as they come. */
  readonly sink: StreamSink;
  /**
   * The call answered: the result with the whole step's text (kept prefix + this answer); tool calls announced. Its
   * usage is this call's, as its provider reported it: a cut attempt before it is counted as its own call (unknown,
   * see `faultUsage`), so the turn's sum keeps this one's reported counts.
   */
  succeeded(result: EngineResult): EngineResult;
  /** The call failed: the fault announced; returns the step's text the caller holds now. */
  failed(fault: Fault): PartialAnswer | undefined;
  /** Characters this attempt received so far (its own text, not the kept prefix): what a cut call had written. */
  readonly receivedChars: number;
}

function keptSources(sources: readonly StreamSource[], chars: number): StreamSource[] {
  const out: StreamSource[] = [];
  let left = chars;
  for (const s of sources) {
    if (left <= 0) break;
    const n = Math.min(s.chars, left);
    out.push({ endpointId: s.endpointId, chars: n });
    left -= n;
  }
  return out;
}

/**
 * Starts one streamed attempt on `endpoint` for the call `input`, pushing its events to `out`.
 *
 * @example
 * ```ts
 * const attempt = beginStreamAttempt(channel, input, engine.endpoint);
 * const result = attempt.succeeded(await engine.stream!({ ...request, prefill: attempt.prefill }, attempt.sink));
 * ```
 */
export function beginStreamAttempt(
  out: TurnStreamSink,
  input: CallEngineInput,
  endpoint: EndpointDescriptor,
  restart = false,
): StreamAttempt {
  const prior = input.partial;
  const priorText = prior?.text ?? '';
  let mode: 'start' | 'continuation' | 'restart' = 'start';
  let kept = '';
  let sources: StreamSource[] = [];
  if (priorText) {
    const trimmed = priorText.trimEnd();
    if (trimmed && !restart && canContinuePrefix(endpoint)) {
      mode = 'continuation';
      kept = trimmed;
      sources = keptSources(prior?.sources ?? [], trimmed.length);
    } else mode = 'restart';
  }
  const endpointId = input.endpointId;
  let announced = false;
  let received = '';
  const announce = () => {
    announced = true;
    const step = input.step ?? 0;
    if (step !== out.lastStep) {
      if (out.lastStep >= 0) out.push({ type: 'step', step });
      out.lastStep = step;
    }
    out.push({
      type: 'endpoint',
      endpointId,
      chainPosition: input.chainPosition,
      mode,
      kept: kept.length,
      withdrawn: priorText.length - kept.length,
      sources,
    });
  };
  const prefixTokens = mode === 'continuation' ? Math.max(1, Math.ceil(kept.length / 4)) : 0;
  return {
    prefill: mode === 'continuation' ? kept : undefined,
    prefixTokens,
    sink: {
      text(delta: string) {
        if (!announced) announce();
        received += delta;
        out.push({ type: 'text', text: delta, endpointId });
      },
    },
    get receivedChars() {
      return received.length;
    },
    succeeded(result) {
      if (!announced) announce();
      for (const call of result.toolCalls) out.push({ type: 'tool-call', call, endpointId });
      return kept ? Object.freeze({ ...result, text: kept + result.text }) : result;
    },
    failed(fault) {
      out.push({ type: 'fault', fault, endpointId, afterChars: received.length });
      // Nothing of this endpoint was shown: the caller still holds the earlier text, unchanged.
      if (!announced) return prior;
      const text = kept + received;
      if (!text) return undefined;
      return {
        text,
        sources: received ? [...sources, { endpointId, chars: received.length }] : sources,
      };
    },
  };
}

/**
 * A memoized answer given to a streamed step (a resumed run): announced whole, withdrawing anything shown before.
 *
 * @example
 * ```ts
 * replayMemoized(channel, input, result);
 * ```
 */
export function replayMemoized(out: TurnStreamSink, input: CallEngineInput, result: EngineResult): void {
  // The memoized text is the whole step's answer: anything shown before it is withdrawn.
  const attempt = beginStreamAttempt(out, input, result.endpoint, true);
  if (result.text) attempt.sink.text(result.text);
  attempt.succeeded(result);
}
