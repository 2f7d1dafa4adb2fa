import type { AgentContext } from '../../machines/agent.types.ts';
import type { Clock } from '../clock/clock.ts';
import type { AgentDefinition, LlmAgentDefinition } from './agent-definition.ts';
import { LlmAgentHandle } from './agent-handle.ts';
import type { ManagedHandle } from './managed-handle.ts';

/**
 * The supervisor's running agents by name: their handles, definitions, BYOK sessions and decision trees. An agent's
 * name is free again once it is forgotten (its handle says it stopped).
 */
export class AgentRegistry {
  readonly handles = new Map<string, ManagedHandle>();
  readonly definitions = new Map<string, AgentDefinition>();
  /** The BYOK session of each LLM agent: only that session's keys come after its chain. */
  readonly sessions = new Map<string, string>();
  /** Read by the degraded responder at answer time, so it is one object for the supervisor's life. */
  readonly trees: Record<string, NonNullable<LlmAgentDefinition['decisionTree']>> = {};

  forget(name: string): void {
    this.handles.delete(name);
    this.definitions.delete(name);
    this.sessions.delete(name);
    delete this.trees[name];
  }

  /**
   * Cooling agents ask again at once: something that may let them go sooner happened (a BYOK key came, a breaker
   * closed). A walk over the agents, on events that are rare by nature (a key injected, an endpoint recovering);
   * with `endpointId`, only the agents whose endpoints include it (others would ask again for nothing).
   */
  recheckCooling(
    clock: Clock,
    endpointsOf: (chain: string, session: string | undefined) => readonly string[],
    endpointId?: string,
  ): void {
    const at = clock.now();
    for (const h of this.handles.values()) {
      if (!(h instanceof LlmAgentHandle) || h.state() !== 'cooling') continue;
      const chain = endpointId && (h.actor.getSnapshot().context as AgentContext).settings.chain;
      if (chain && !endpointsOf(chain, this.sessions.get(h.name)).includes(endpointId)) continue;
      h.actor.send({ type: 'RECHECK', at });
    }
  }
}
