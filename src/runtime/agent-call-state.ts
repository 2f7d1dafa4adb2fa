import type { AcquireTokenInput, TokenAnswer } from '../../machines/agent.machine.ts';
import type { EngineRequest, EngineResult } from '../core/engine-types.ts';
import type { PromptParts } from '../core/turn.ts';
import type { TokenDecision, TokenRequest } from '../scheduler/token-scheduler.ts';
import { buildRequest, estimateRequestTokens } from './prompt-builder.ts';

/** Prefix of a memo grant's lease id: the answer is memoized, no token was taken. */
export const MEMO_LEASE = 'memo:';

/** A request as it is sent, less the signal the call adds. */
export type BuiltRequest = Omit<EngineRequest, 'signal'>;

/**
 * What the agent's actors hand each other between a token and its call, per supervisor: the request a token was
 * sized for (the call sends that one, built once), and answers read from the memo before any token.
 */
export class AgentCallState {
  /** The request an agent's token was estimated for, by agent, until its call takes it. */
  readonly built = new Map<string, { parts: PromptParts; request: BuiltRequest }>();
  /** Answers read from the memo before any token, by their memo grant, until the call takes them. */
  readonly memoized = new Map<string, EngineResult>();
  readonly #sessionOf: (agent: string) => string | undefined;
  readonly #workLeftOf: ((agent: string) => number | undefined) | undefined;

  constructor(
    sessionOf: (agent: string) => string | undefined,
    workLeftOf?: (agent: string) => number | undefined,
  ) {
    this.#sessionOf = sessionOf;
    this.#workLeftOf = workLeftOf;
  }

  /** What the scheduler is asked for: the agent's token request, sized by the request it will send. */
  schedulerRequest(input: AcquireTokenInput, request: BuiltRequest): TokenRequest {
    const session = this.#sessionOf(input.agent);
    const workLeft = this.#workLeftOf?.(input.agent);
    return {
      holder: input.agent,
      tier: input.tier,
      chain: input.chain,
      ...(session !== undefined ? { session } : {}),
      estimatedTokens: estimateRequestTokens(request),
      maxWaitMs: input.maxWaitMs,
      ...(input.cooledMs ? { cooledMs: input.cooledMs } : {}),
      retry: input.retry,
      attempt: input.attempt,
      ...(input.tried ? { tried: input.tried } : {}),
      ...(input.skip ? { skip: input.skip } : {}),
      ...(workLeft ? { workLeft } : {}),
    };
  }

  /** The request the agent's call sends: the one its token was sized for, unless what it is built from changed. */
  requestFor(agent: string, parts: PromptParts): BuiltRequest {
    const b = this.built.get(agent);
    this.built.delete(agent);
    const same =
      b !== undefined &&
      b.parts.idempotencyKey === parts.idempotencyKey &&
      b.parts.memory === parts.memory &&
      b.parts.turnMessages === parts.turnMessages;
    return same ? b.request : buildRequest(parts);
  }
}

/** The scheduler's decision as plain data for the agent's snapshot. */
export function tokenAnswer(d: TokenDecision): TokenAnswer {
  if (d.kind === 'granted') {
    const { leaseId, endpointId, index, grantedAt } = d.grant;
    return { kind: 'granted', leaseId, endpointId, index, at: grantedAt };
  }
  if (d.kind === 'cool') return { kind: 'cool', endpointId: d.endpointId, until: d.until, at: d.at };
  return { kind: 'denied', reason: d.reason, at: d.at };
}
