import { sleep } from '../../clock/clock.ts';
import type { Fault } from '../../core/fault.ts';
import { NO_USAGE } from '../../core/token-usage.ts';
import type { Turn, TurnOutcome } from '../../core/turn.ts';
import type { TurnRequest } from '../turn-executor.ts';
import { attemptCall } from './status-quo-attempt.ts';
import type { ChainLink } from './status-quo-chain.ts';
import { type AgentSlot, type StatusQuoParts, setSlotState } from './status-quo-state.ts';

/**
 * The exact line seed 000's worker wrote when `_eligible_model_chain()` came back empty.
 *
 * @example
 * ```ts
 * events.filter((e) => e.type === 'policy.log' && e.data.message === ALL_COOLING_MESSAGE).length;
 * ```
 */
export const ALL_COOLING_MESSAGE = 'all candidate models are cooling down';

/** `_eligible_model_chain()`: the chain without the models cooling down. */
function eligibleModelChain(parts: StatusQuoParts): ChainLink[] {
  return parts.chain.filter(
    (link) => (parts._MODEL_COOLDOWN_UNTIL.get(link.model) ?? 0) <= parts.clock.now(),
  );
}

/**
 * `_call_llm_with_guardrails()`, on a thread of the pool: the eligible models in order, then a blocking sleep,
 * round after round, until an answer, the last sleep, or no eligible model left.
 */
export async function runTask(
  parts: StatusQuoParts,
  slot: AgentSlot,
  request: TurnRequest,
  askedAt: number,
  signal: AbortSignal,
): Promise<Turn> {
  const { clock, logger, backoff } = parts;
  const faults: Fault[] = [];
  let attempts = 0;
  /** Time spent in upstream calls; the rest of the turn was waiting (for a thread, or asleep). */
  let callTime = 0;
  const finish = (outcome: TurnOutcome, extra: Partial<Turn> = {}): Turn => ({
    turnId: request.turnId,
    agent: slot.spec.name,
    tier: slot.tier,
    prompt: request.prompt,
    answer: { text: '' },
    outcome,
    degraded: false,
    faults,
    waitMs: clock.now() - askedAt - callTime,
    attempts,
    usage: NO_USAGE,
    messages: [],
    startedAt: askedAt,
    finishedAt: clock.now(),
    ...extra,
  });
  for (let round = 0; ; round++) {
    const eligible = eligibleModelChain(parts);
    if (eligible.length === 0) {
      parts.emit({
        type: 'policy.log',
        at: clock.now(),
        agent: slot.spec.name,
        data: { message: ALL_COOLING_MESSAGE, tier: slot.tier },
      });
      logger.error({ agent: slot.spec.name }, ALL_COOLING_MESSAGE);
      return finish('failed', { error: ALL_COOLING_MESSAGE });
    }
    for (const link of eligible) {
      const callStart = clock.now();
      const outcome = await attemptCall(parts, slot, link, request, attempts++, signal);
      callTime += clock.now() - callStart;
      if (!('kind' in outcome)) {
        const fallback = parts.chain.indexOf(link) > 0;
        slot.memory = {
          ...slot.memory,
          utterances: [
            ...slot.memory.utterances,
            {
              turnId: request.turnId,
              prompt: request.prompt,
              answer: outcome.text,
              endpointId: link.endpoint.id,
              degraded: false,
            },
          ],
        };
        return finish(fallback ? 'fallback' : 'answered', {
          answer: { text: outcome.text },
          endpointId: link.endpoint.id,
          model: outcome.model,
          usage: outcome.usage,
        });
      }
      faults.push(outcome);
      if (outcome.kind === 'cancelled' || signal.aborted) return finish('cancelled', { error: 'cancelled' });
    }
    const delay = backoff[round];
    if (delay === undefined) {
      const last = faults[faults.length - 1];
      return finish('failed', {
        error: `every model failed after ${backoff.length} retries (last: ${last?.kind ?? 'unknown'}${last?.status ? ` ${last.status}` : ''})`,
      });
    }
    slot.sleeping++;
    setSlotState(slot, parts);
    try {
      // time.sleep() in the worker thread: the thread is held, nothing else runs on it.
      await sleep(clock, delay, signal);
    } catch {
      return finish('cancelled', { error: 'cancelled' });
    } finally {
      slot.sleeping--;
      setSlotState(slot, parts);
    }
  }
}
