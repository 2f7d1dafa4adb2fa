import type { EngineResult } from '../../core/engine-types.ts';
import { type Fault, isEngineFaultError } from '../../core/fault.ts';
import { scrubSecrets } from '../../redact/secret-scrubber.ts';
import { buildRequest } from '../../runtime/prompt-builder.ts';
import type { TurnRequest } from '../turn-executor.ts';
import type { ChainLink } from './status-quo-chain.ts';
import { type AgentSlot, type StatusQuoParts, setSlotState } from './status-quo-state.ts';

/** One upstream attempt; a 429 writes the model into the worker-wide cooldown map. */
export async function attemptCall(
  parts: StatusQuoParts,
  slot: AgentSlot,
  link: ChainLink,
  request: TurnRequest,
  n: number,
  signal: AbortSignal,
): Promise<EngineResult | Fault> {
  const { clock, logger, _MODEL_COOLDOWN_UNTIL } = parts;
  const startedAt = clock.now();
  slot.calling++;
  setSlotState(slot, parts);
  try {
    const built = buildRequest({
      ...(slot.spec.role !== undefined ? { role: slot.spec.role } : {}),
      memory: slot.memory,
      historyTurns: parts.historyTurns,
      turnMessages: [{ role: 'user', content: request.prompt }],
      tools: [],
      maxTokens: slot.spec.maxTokens ?? parts.defaultMaxTokens,
      idempotencyKey: `${request.key}:${n}`,
    });
    const result = await parts.engineFor(link.endpoint).call({ ...built, signal });
    recordAttempt(parts, slot, link, startedAt);
    logger.info(
      { agent: slot.spec.name, confirmed_model: `${link.endpoint.provider}/${link.model}` },
      `confirmed_model=${link.endpoint.provider}/${link.model}`,
    );
    return result;
  } catch (e) {
    const fault: Fault = isEngineFaultError(e)
      ? e.fault
      : { kind: 'bad_request', provider: link.endpoint.provider, message: scrubSecrets(String(e)) };
    recordAttempt(parts, slot, link, startedAt, fault);
    if (fault.status === 429 || fault.kind === 'rate_limited') {
      const until = clock.now() + Math.max(parts.cooldownMs, fault.retryAfterMs ?? 0);
      _MODEL_COOLDOWN_UNTIL.set(link.model, Math.max(_MODEL_COOLDOWN_UNTIL.get(link.model) ?? 0, until));
      logger.warn({ agent: slot.spec.name, model: link.model, until }, 'model cooling down (process-wide)');
    }
    return fault;
  } finally {
    slot.calling--;
    setSlotState(slot, parts);
  }
}

/** The `call.attempt` event of one upstream attempt, as breakwater emits it. */
function recordAttempt(
  parts: Pick<StatusQuoParts, 'clock' | 'emit'>,
  slot: AgentSlot,
  link: ChainLink,
  startedAt: number,
  fault?: Fault,
): void {
  const at = parts.clock.now();
  parts.emit({
    type: 'call.attempt',
    at,
    agent: slot.spec.name,
    endpoint: link.endpoint.id,
    data: {
      tier: slot.tier,
      outcome: fault ? 'fault' : 'ok',
      startedAt,
      latencyMs: at - startedAt,
      provider: link.endpoint.provider,
      model: link.model,
      ...(fault
        ? {
            faultKind: fault.kind,
            ...(fault.status !== undefined ? { status: fault.status } : {}),
            ...(fault.retryAfterMs !== undefined ? { retryAfterMs: fault.retryAfterMs } : {}),
          }
        : { status: 200 }),
    },
  });
}
