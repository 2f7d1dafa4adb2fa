/**
 * An ask reached an agent that is stopped (its handle's `stop()`, or the supervisor's `stop()`). Nothing was
 * sent upstream. Spawn the agent again (its name is free) or create a new supervisor.
 *
 * @example
 * ```ts
 * try { await agent.ask('Item 3?'); }
 * catch (e) { if (isAgentStoppedError(e)) console.log(e.message); else throw e; }
 * ```
 */
export class AgentStoppedError extends Error {
  readonly code = 'AGENT_STOPPED' as const;
  readonly agent: string;
  /** Who stopped it. */
  readonly by: 'agent' | 'supervisor';
  constructor(agent: string, by: 'agent' | 'supervisor') {
    super(
      by === 'agent'
        ? `agent ${agent} is stopped; spawn it again (supervisor.spawnAgent) to give it work`
        : `agent ${agent} cannot take work: the supervisor is stopping or stopped; create a new supervisor`,
    );
    this.name = 'AgentStoppedError';
    this.agent = agent;
    this.by = by;
  }
}

/**
 * Type guard for {@link AgentStoppedError}.
 *
 * @example
 * ```ts
 * const turn = await agent.ask('x').catch((e: unknown) => { if (isAgentStoppedError(e)) return undefined; throw e; });
 * ```
 */
export function isAgentStoppedError(e: unknown): e is AgentStoppedError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'AGENT_STOPPED';
}
