import type { AnyActorRef } from 'xstate';
import type { Logger } from 'pino';
import type { Clock } from '../clock/clock.ts';
import type { TimerHeap } from '../clock/timer-heap.ts';
import type { CallMemo, CallRecordEvent } from '../core/call-memo.ts';
import type { DegradedResponder } from '../degraded/degraded-responder.ts';
import type { EndpointRegistry } from '../health/endpoint-registry.ts';
import type { TokenScheduler } from '../scheduler/token-scheduler.ts';
import { createAcquireTokenActor } from './acquire-token-actor.ts';
import { AgentCallState } from './agent-call-state.ts';
import type { AgentDefinition } from './agent-definition.ts';
import { createAnswerDegradedActor } from './answer-degraded-actor.ts';
import { createCheckHealthActor } from './check-health-actor.ts';
import { EngineCalls } from './engine-call.ts';
import { createGrantAtOnce } from './grant-at-once.ts';
import { memoWriter } from './memo-writer.ts';
import { createRunToolsActor } from './run-tools-actor.ts';
import type { TurnStreamSink } from './turn-stream.ts';
import { createWakeAtActor } from './wake-at-actor.ts';

export type { ReadyAsk } from './grant-at-once.ts';

export interface AgentActorDeps {
  readonly endpoints: EndpointRegistry;
  readonly scheduler: TokenScheduler;
  readonly timers: TimerHeap;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly definitions: ReadonlyMap<string, AgentDefinition>;
  readonly degraded: DegradedResponder;
  /** The BYOK session of an agent (its keys come after its chain). */
  readonly sessionOf: (agent: string) => string | undefined;
  /** Asks an agent has left, its running one included (its token requests' `workLeft`); undefined: not known. */
  readonly workLeftOf?: (agent: string) => number | undefined;
  /** Endpoint ids an agent may use, in order (its chain, then its session's BYOK keys). */
  readonly endpointsOf: (agent: string, chain: string) => readonly string[];
  readonly memo?: CallMemo;
  /** Receives one record per upstream attempt (the call log as data). */
  readonly onCall?: (record: CallRecordEvent) => void;
  /** Whether anyone hears `onCall` now (default: yes when it is set); no record is built for nobody. */
  readonly callsHeard?: () => boolean;
  /** The trace and span ids of an agent's running turn, for its log lines (when tracing is on). */
  readonly traceIdsOf?: (turnId: string) => { trace_id: string; span_id: string } | undefined;
  /** Where a streamed turn's events go: the channel of `agent`'s running ask, if it is turn `turnId`. */
  readonly streamOf?: (agent: string, turnId: string) => TurnStreamSink | undefined;
}

export type { CallMemo, CallRecordEvent } from '../core/call-memo.ts';

/**
 * The real implementations of the agent machine's named actors and actions, one file each:
 * - `acquireToken` (acquire-token-actor.ts): asks the scheduler, or reads the memo first;
 * - `startCall` / `stopCall` (engine-call.ts): the engine call, spending its grant and releasing it once;
 * - `runTools`, `answerDegraded`, `checkHealth`, and `wakeAt` (a deadline in the runtime's timer heap);
 * - `grantAtOnce` (grant-at-once.ts): the first token of a turn, taken with its ASK when one is free.
 */
export function createAgentActors(deps: AgentActorDeps) {
  const { endpoints, scheduler, clock, logger, memo } = deps;
  const remember = memoWriter(memo, logger);
  const state = new AgentCallState(deps.sessionOf, deps.workLeftOf);
  const calls = new EngineCalls({
    endpoints,
    scheduler,
    clock,
    logger,
    memo,
    state,
    remember,
    onCall: deps.onCall,
    callsHeard: deps.callsHeard,
    traceIdsOf: deps.traceIdsOf,
    streamOf: deps.streamOf,
  });
  return {
    actors: {
      acquireToken: createAcquireTokenActor({
        scheduler,
        clock,
        logger,
        memo,
        state,
        endpointsOf: deps.endpointsOf,
      }),
      runTools: createRunToolsActor({ definitions: deps.definitions, memo, remember, logger, clock }),
      answerDegraded: createAnswerDegradedActor({ degraded: deps.degraded, logger, clock }),
      wakeAt: createWakeAtActor({ timers: deps.timers, clock }),
      checkHealth: createCheckHealthActor({ endpoints, endpointsOf: deps.endpointsOf, clock }),
    },
    actions: { startCall: calls.startCall, stopCall: calls.stopCall },
    grantAtOnce: createGrantAtOnce(scheduler, memo, state),
    /** Cuts the call of an agent that stopped without leaving its state (its machine failed). */
    leaveCall: (agent: AnyActorRef) => calls.stopCall({ self: agent }),
  };
}

/** What {@link createAgentActors} makes: the machine's actors, and the grant an `ASK` may come with. */
export type AgentActors = ReturnType<typeof createAgentActors>;
