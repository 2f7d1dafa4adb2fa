import type { Actor } from 'xstate';
import { agentMachine } from '../../machines/agent.machine.ts';
import type { TimerHeap } from '../clock/timer-heap.ts';
import type { AnswerCache } from '../degraded/answer-cache.ts';
import { createDegradedResponder } from '../degraded/degraded-responder.ts';
import type { EndpointRegistry } from '../health/endpoint-registry.ts';
import type { TokenScheduler } from '../scheduler/token-scheduler.ts';
import { createAgentActors } from './agent-actors.ts';
import { type AgentStateChange, LlmAgentHandle } from './agent-handle.ts';
import type { AgentHandleHooks } from './agent-handle-hooks.ts';
import type { AgentRegistry } from './agent-registry.ts';
import type { KeepAlive } from './keep-alive.ts';
import type { RuntimeEventBus } from './runtime-event-bus.ts';
import { callEvent, turnEvent } from './runtime-events.ts';
import type { SupervisorConfig } from './supervisor-config.ts';

/** What the agents of one supervisor share: their machine's logic, their handles' hooks, the state listeners. */
export interface SupervisorAgents {
  /** The agent machine with the supervisor's actors and actions provided. */
  readonly agentLogic: typeof agentMachine;
  readonly handleHooks: AgentHandleHooks;
  /** `supervisor.subscribe`'s listeners of agent state changes. */
  readonly stateListeners: Set<(change: AgentStateChange) => void>;
}

export interface SupervisorAgentParts {
  readonly supervisor: SupervisorConfig;
  readonly registry: AgentRegistry;
  readonly bus: RuntimeEventBus;
  readonly endpoints: EndpointRegistry;
  readonly scheduler: TokenScheduler;
  readonly timers: TimerHeap;
  readonly keepAlive: KeepAlive;
  readonly cache: AnswerCache;
  /** An agent's endpoints: its chain, then its BYOK session's keys. */
  readonly endpointsOf: (chain: string, session: string | undefined) => readonly string[];
  /** Stops an agent's actor: the lifecycle owns the actors' system, and it is built after the agents' logic. */
  readonly stopActor: (actor: Actor<typeof agentMachine>) => void;
}

export function buildSupervisorAgents(parts: SupervisorAgentParts): SupervisorAgents {
  const { supervisor, registry, bus, endpoints, cache } = parts;
  const { clock, logger, tracer } = supervisor;
  const agentActors = createAgentActors({
    // A streamed turn's channel is its agent's running ask's own (never a map by turn id: a caller-chosen id
    // may be shared by two turns, which must not see each other's text).
    streamOf: (agent, turnId) => {
      const h = registry.handles.get(agent);
      return h instanceof LlmAgentHandle ? h.streamSink(turnId) : undefined;
    },
    endpoints,
    scheduler: parts.scheduler,
    timers: parts.timers,
    clock,
    logger,
    definitions: registry.definitions,
    degraded: createDegradedResponder({ cache, trees: registry.trees }),
    sessionOf: (agent) => registry.sessions.get(agent),
    workLeftOf: (agent) => {
      const h = registry.handles.get(agent);
      return h instanceof LlmAgentHandle ? h.asksLeft : undefined;
    },
    endpointsOf: (agent, chain) => parts.endpointsOf(chain, registry.sessions.get(agent)),
    ...(supervisor.memo ? { memo: supervisor.memo } : {}),
    ...(tracer ? { traceIdsOf: (turnId: string) => tracer.idsOf(turnId) } : {}),
    onCall: (c) => {
      if (bus.heard()) bus.emit(callEvent(c));
      tracer?.attempt(c, endpoints.get(c.endpointId)?.health.breakerState);
    },
    callsHeard: () => bus.heard() || tracer !== undefined,
  });
  const stateListeners = new Set<(c: AgentStateChange) => void>();
  const handleHooks: AgentHandleHooks = {
    clock,
    keepAlive: parts.keepAlive,
    onState: (c) => {
      if (bus.heard())
        bus.emit({
          type: 'agent.state',
          at: c.at,
          agent: c.agent,
          data: { state: c.state, previous: c.previous },
        });
      for (const l of stateListeners) bus.guard('subscribe', () => l(c));
    },
    onTurn: (turn, meta) => {
      if (turn.outcome === 'answered' || turn.outcome === 'fallback')
        cache.remember(turn.agent, turn.prompt, turn.answer.text);
      if (bus.heard()) bus.emit(turnEvent(turn, meta));
    },
    onStopped: (name) => registry.forget(name),
    stopActor: parts.stopActor,
    grantAtOnce: agentActors.grantAtOnce,
    leaveCall: agentActors.leaveCall,
    tracer,
  };
  return {
    agentLogic: agentMachine.provide({ actors: agentActors.actors, actions: agentActors.actions }),
    handleHooks,
    stateListeners,
  };
}
