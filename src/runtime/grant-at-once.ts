import {
  type AcquireTokenInput,
  type AgentContext,
  type AgentEvent,
  type GrantedAnswer,
  tokenRequestOf,
  turnOfAsk,
} from '../../machines/agent.machine.ts';
import type { CallMemo } from '../core/call-memo.ts';
import type { TokenRequest, TokenScheduler } from '../scheduler/token-scheduler.ts';
import { type AgentCallState, type BuiltRequest, tokenAnswer } from './agent-call-state.ts';
import { buildRequest } from './prompt-builder.ts';

type AskEvent = Extract<AgentEvent, { type: 'ASK' }>;

/** What an `ASK` carries when its first call's token was taken at once (see {@link createGrantAtOnce}). */
export type ReadyAsk = NonNullable<AskEvent['ready']>;

/**
 * The first call's token for the turn `ask` starts, taken now when the scheduler can grant one at once (a token
 * free, nobody waiting, an endpoint ready): the agent then goes from idle to calling in one step, with no `queued`
 * state, no `acquireToken` actor and no event in between. Undefined (nothing taken) otherwise, and always with a
 * memo (its read comes before any token), or when the agent is not idle. A grant its agent does not claim in the
 * same step (it was not idle after all) is given back.
 */
export function createGrantAtOnce(
  scheduler: TokenScheduler,
  memo: CallMemo | undefined,
  state: AgentCallState,
) {
  return (context: AgentContext, idle: boolean, ask: AskEvent): ReadyAsk | undefined => {
    if (!idle || memo || !scheduler.tryGrant) return undefined;
    let prepared: {
      turn: ReadyAsk['turn'];
      input: AcquireTokenInput;
      request: BuiltRequest;
      asked: TokenRequest;
    };
    try {
      const turn = turnOfAsk(ask);
      const input = tokenRequestOf({ ...context, turn });
      const request = buildRequest(input.prompt);
      prepared = { turn, input, request, asked: state.schedulerRequest(input, request) };
    } catch {
      // A request that cannot be built (a prompt that is not text, arguments JSON cannot hold): the ASK queues
      // without a grant, and `acquireToken` meets the same error where it reports it (the turn fails, settled).
      return undefined;
    }
    const { turn, input, request, asked } = prepared;
    const grant = scheduler.tryGrant(asked);
    if (!grant) return undefined;
    state.built.set(input.agent, { parts: input.prompt, request });
    queueMicrotask(() => scheduler.releaseUnclaimed(grant.leaseId));
    return { grant: tokenAnswer({ kind: 'granted', grant }) as GrantedAnswer, turn };
  };
}
