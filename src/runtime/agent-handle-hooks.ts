import type { Actor } from 'xstate';
import type { agentMachine } from '../../machines/agent.machine.ts';
import type { Clock } from '../clock/clock.ts';
import type { Turn } from '../core/turn.ts';
import type { AgentActors } from './agent-actors.ts';
import type { AgentStateChange, TurnMeta } from './agent-handle-types.ts';
import type { KeepAlive } from './keep-alive.ts';
import type { TurnTracer } from './tracing/turn-tracer.ts';

/**
 * What every LLM agent handle of one supervisor shares: one object for all of them, so an idle agent costs no
 * closures of its own.
 */
export interface AgentHandleHooks {
  readonly clock: Clock;
  readonly keepAlive: KeepAlive;
  readonly onState: (c: AgentStateChange) => void;
  /** Every finished turn (the event log, the answer cache). */
  readonly onTurn: (t: Turn, meta: TurnMeta | undefined) => void;
  /** The agent stopped (its name is free again). */
  readonly onStopped: (name: string) => void;
  /** Stops the actor (its owner does: the actor runs on the supervisor's system). */
  readonly stopActor: (actor: Actor<typeof agentMachine>) => void;
  /** Spans of turns and attempts (OpenTelemetry); absent when tracing is off. */
  readonly tracer?: TurnTracer | undefined;
  /** The first call's token of a turn, when it can be had at once (see `AgentActors.grantAtOnce`). */
  readonly grantAtOnce?: AgentActors['grantAtOnce'];
  /** Cuts the engine call of an agent that stopped without leaving its state (see `AgentActors.leaveCall`). */
  readonly leaveCall?: AgentActors['leaveCall'];
}
