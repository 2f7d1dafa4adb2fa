import type { Logger } from 'pino';
import type { Clock } from '../../clock/clock.ts';
import type { ParsedEndpointConfig } from '../../engines/endpoint-config.ts';
import type { Engine } from '../../core/engine-types.ts';
import type { RuntimeEvent } from '../../core/runtime-event.ts';
import { type AgentMemory, emptyMemory } from '../../core/turn.ts';
import type { ScenarioAgent, ScenarioSpec } from '../../scenarios/scenario-types.ts';
import type { ChainLink } from './status-quo-chain.ts';

/** What every task of the old worker shares, resolved once by `createStatusQuoExecutor` (its defaults applied). */
export interface StatusQuoParts {
  readonly clock: Clock;
  readonly logger: Logger;
  /** The one chain of every agent. */
  readonly chain: readonly ChainLink[];
  /** The seed's own name: one map for the whole worker, every agent reads and writes it. */
  readonly _MODEL_COOLDOWN_UNTIL: Map<string, number>;
  readonly cooldownMs: number;
  /** Blocking sleeps between rounds of attempts. */
  readonly backoff: readonly number[];
  readonly historyTurns: number;
  readonly defaultMaxTokens: number;
  /** The endpoint's engine, built on its first call. */
  readonly engineFor: (endpoint: ParsedEndpointConfig) => Engine;
  readonly emit: (event: RuntimeEvent) => void;
}

/** One agent of the old worker: its memory, and how many of its tasks call, sleep or wait for a thread. */
export interface AgentSlot {
  readonly spec: ScenarioAgent;
  readonly tier: string;
  memory: AgentMemory;
  calling: number;
  sleeping: number;
  queued: number;
  state: string;
}

/** A slot per agent of the scenario, idle with an empty memory; an agent without a tier is in the lowest. */
export function createAgentSlots(spec: ScenarioSpec): Map<string, AgentSlot> {
  const tiers = spec.runtime.tiers ?? ['analysis', 'ops'];
  const lowest = tiers[tiers.length - 1] ?? 'ops';
  const agents = new Map<string, AgentSlot>();
  for (const a of spec.agents) {
    agents.set(a.name, {
      spec: a,
      tier: a.tier ?? lowest,
      memory: emptyMemory(a.memory ?? {}),
      calling: 0,
      sleeping: 0,
      queued: 0,
      state: 'idle',
    });
  }
  return agents;
}

/** The slot's state from its counts (calling wins, then sleeping, then queued); an `agent.state` when it changed. */
export function setSlotState(slot: AgentSlot, parts: Pick<StatusQuoParts, 'clock' | 'emit'>): void {
  const next =
    slot.calling > 0 ? 'calling' : slot.sleeping > 0 ? 'cooling' : slot.queued > 0 ? 'queued' : 'idle';
  if (next === slot.state) return;
  const previous = slot.state;
  slot.state = next;
  parts.emit({
    type: 'agent.state',
    at: parts.clock.now(),
    agent: slot.spec.name,
    data: { state: next, previous },
  });
}
