import { type Actor, type AnyActorRef, createActor, type Snapshot } from 'xstate';
import type { AgentInput, agentMachine } from '../../machines/agent.machine.ts';
import type { Clock } from '../clock/clock.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { AgentStoppedError } from '../core/errors/lifecycle-errors.ts';
import { emptyMemory } from '../core/turn.ts';
import { type AgentDefinition, isNoAgentDefinition, unknownAgentField } from './agent-definition.ts';
import { LlmAgentHandle } from './agent-handle.ts';
import type { AgentHandleHooks } from './agent-handle-hooks.ts';
import type { AgentRegistry } from './agent-registry.ts';
import { agentSettings } from './agent-settings.ts';
import { restoredAgentSnapshot } from './agent-snapshot.ts';
import type { KeepAlive } from './keep-alive.ts';
import type { ManagedHandle } from './managed-handle.ts';
import { NoAgentHandle } from './no-agent-handle.ts';
import type { RuntimeConfig } from './runtime-config.ts';
import type { RuntimeEventBus } from './runtime-event-bus.ts';
import { turnEvent } from './runtime-events.ts';
import { DEFAULT_BYOK_SESSION } from './supervisor-byok.ts';
import type { Supervisor } from './supervisor-types.ts';

/** What spawning an agent needs from the supervisor. */
export interface AgentSpawnerParts {
  readonly config: RuntimeConfig;
  readonly clock: Clock;
  readonly keepAlive: KeepAlive;
  readonly registry: AgentRegistry;
  readonly bus: RuntimeEventBus;
  /** The agent machine with the supervisor's actors and actions provided. */
  readonly agentLogic: typeof agentMachine;
  readonly handleHooks: AgentHandleHooks;
  /** The supervisor's lifecycle actor: every agent runs on its system (one system, one clock, one inspection feed). */
  readonly lifecycle: AnyActorRef;
  /** Whether the supervisor still takes agents (not draining or stopped). */
  readonly running: () => boolean;
}

/**
 * The tier a definition runs on, once every field is checked: a bad one is refused with a ConfigError naming
 * `agents.<name>.<field>` and what to write.
 */
function checkedTier(definition: AgentDefinition, parts: AgentSpawnerParts): string {
  const { config, registry } = parts;
  const where = `agents.${definition.name}`;
  if (!definition.name)
    throw new ConfigError({ source: 'spawnAgent', path: 'name', message: 'an agent needs a name' });
  const unknown = unknownAgentField(definition);
  if (unknown)
    throw new ConfigError({ source: 'spawnAgent', path: `${where}.${unknown.field}`, message: unknown.hint });
  if (!parts.running()) throw new AgentStoppedError(definition.name, 'supervisor');
  if (registry.handles.has(definition.name))
    throw new ConfigError({
      source: 'spawnAgent',
      path: `${where}.name`,
      message:
        'an agent of this name is already running; names must be unique (stop it first to reuse the name)',
    });
  const tier = definition.tier ?? config.tiers[config.tiers.length - 1]!;
  if (!config.tiers.includes(tier))
    throw new ConfigError({
      source: 'spawnAgent',
      path: `${where}.tier`,
      message: `unknown tier "${tier}"; use one of ${config.tiers.join(', ')}`,
    });
  if (isNoAgentDefinition(definition)) return tier;
  if (!config.chains[definition.chain])
    throw new ConfigError({
      source: 'spawnAgent',
      path: `${where}.chain`,
      message: `unknown chain "${definition.chain}"; define it under chains (defined: ${Object.keys(config.chains).join(', ')})`,
    });
  if (
    definition.session !== undefined &&
    (typeof definition.session !== 'string' || definition.session.length === 0)
  )
    throw new ConfigError({
      source: 'spawnAgent',
      path: `${where}.session`,
      message: 'must be a non-empty string (the user session whose BYOK keys the agent may use)',
    });
  return tier;
}

/** `supervisor.spawnAgent`: checks the definition, then starts its handle (and, for an LLM agent, its actor). */
export function createAgentSpawner(parts: AgentSpawnerParts): Supervisor['spawnAgent'] {
  const { config, clock, keepAlive, registry, bus } = parts;
  const forget = (name: string) => registry.forget(name);
  return (definition, spawnOptions = {}) => {
    const tier = checkedTier(definition, parts);
    if (isNoAgentDefinition(definition)) {
      registry.definitions.set(definition.name, definition);
      const h = new NoAgentHandle({
        definition,
        tier,
        clock,
        keepAlive,
        onTurn: (turn, meta) => bus.emit(turnEvent(turn, meta)),
        onStopped: forget,
      });
      registry.handles.set(definition.name, h);
      return h;
    }
    registry.definitions.set(definition.name, definition);
    registry.sessions.set(definition.name, definition.session ?? DEFAULT_BYOK_SESSION);
    if (definition.decisionTree) registry.trees[definition.name] = definition.decisionTree;
    const agentInput: AgentInput = {
      settings: agentSettings(definition, tier, config),
      memory: spawnOptions.memory ?? emptyMemory(definition.memory),
    };
    // A stored snapshot holds neither settings (the definition gives them) nor utterances (the turns log does).
    const snapshot = spawnOptions.snapshot
      ? restoredAgentSnapshot(spawnOptions.snapshot, agentInput.settings, agentInput.memory)
      : undefined;
    // Not a child of the lifecycle (no `children` snapshot to copy: spawn and stop are O(1)), but on its system:
    // one system for all agents, the inspection feed and the clock included.
    const actor: Actor<typeof agentMachine> = createActor(parts.agentLogic, {
      id: definition.name,
      parent: parts.lifecycle,
      input: agentInput,
      ...(snapshot ? { snapshot: snapshot as unknown as Snapshot<unknown> } : {}),
    });
    const h: ManagedHandle = new LlmAgentHandle(definition.name, tier, actor, parts.handleHooks);
    registry.handles.set(definition.name, h);
    actor.start();
    return h;
  };
}
