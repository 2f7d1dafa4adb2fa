import type { Logger } from 'pino';
import { fromCallback } from 'xstate';
import type { AcquireTokenInput, AgentEvent } from '../../machines/agent.machine.ts';
import type { Clock } from '../clock/clock.ts';
import type { CallMemo } from '../core/call-memo.ts';
import type { EngineResult } from '../core/engine-types.ts';
import type { TokenScheduler, TokenTicket } from '../scheduler/token-scheduler.ts';
import { sanitized } from './actor-failure.ts';
import { type AgentCallState, MEMO_LEASE, tokenAnswer } from './agent-call-state.ts';
import { buildRequest } from './prompt-builder.ts';

export interface AcquireTokenParts {
  readonly scheduler: TokenScheduler;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly memo: CallMemo | undefined;
  readonly state: AgentCallState;
  /** Endpoint ids an agent may use, in order (its chain, then its session's BYOK keys). */
  readonly endpointsOf: (agent: string, chain: string) => readonly string[];
}

/**
 * The agent machine's `acquireToken`: asks the scheduler for a token and an endpoint; a grant its holder leaves
 * before calling is given back at once. With a memo, the memo is read FIRST, holding nothing: a call whose answer
 * is memoized (a resumed round) gets a memo grant (`memo:<key>`) that takes no token, and its call answers from the
 * memo without going upstream.
 */
export function createAcquireTokenActor(parts: AcquireTokenParts) {
  const { scheduler, clock, logger, memo, state } = parts;
  return fromCallback<AgentEvent, AcquireTokenInput>(({ input, sendBack }) => {
    let left = false;
    let granted: string | undefined;
    let ticket: TokenTicket | undefined;
    const failed = (e: unknown) =>
      sendBack({ type: 'TOKEN.FAILED', error: sanitized(logger, clock, 'acquireToken', e) });
    const request = () => {
      try {
        const built = buildRequest(input.prompt);
        state.built.set(input.agent, { parts: input.prompt, request: built });
        ticket = scheduler.request(state.schedulerRequest(input, built));
      } catch (e) {
        // Reported as an event (the machine's failure path), not thrown into XState.
        failed(e);
        return;
      }
      ticket.decision.then(
        (d) => {
          if (d.kind === 'granted') granted = d.grant.leaseId;
          else state.built.delete(input.agent);
          // The agent left `queued` first (cancelled, stopped): nobody will call with this grant.
          if (left) {
            state.built.delete(input.agent);
            if (granted) scheduler.releaseUnclaimed(granted);
            return;
          }
          sendBack({ type: 'TOKEN.ANSWER', output: tokenAnswer(d) });
        },
        (e: unknown) => {
          if (!left) failed(e);
        },
      );
    };
    if (!memo) request();
    else {
      const key = input.prompt.idempotencyKey;
      memo.recall(key).then(
        (hit) => {
          if (left) return;
          if (hit === undefined || hit === null) return request();
          const result = hit as EngineResult;
          const leaseId = `${MEMO_LEASE}${key}`;
          state.memoized.set(leaseId, result);
          const ids = parts.endpointsOf(input.agent, input.chain);
          const endpointId = result.endpoint?.id ?? ids[0] ?? 'memo';
          const index = Math.max(0, ids.indexOf(endpointId));
          sendBack({
            type: 'TOKEN.ANSWER',
            output: { kind: 'granted', leaseId, endpointId, index, at: clock.now() },
          });
        },
        // A memo that cannot be read might hold the answer: asking upstream again could repeat a call that had
        // returned, so the turn fails (a bug or a lost store, reported sanitized), holding nothing.
        (e: unknown) => {
          if (!left) failed(e);
        },
      );
    }
    return () => {
      left = true;
      if (!granted) state.built.delete(input.agent);
      ticket?.withdraw();
      // Leaving `queued` for `calling` claims the grant in the same step; anything else leaves it unclaimed.
      if (granted) queueMicrotask(() => scheduler.releaseUnclaimed(granted!));
    };
  });
}
