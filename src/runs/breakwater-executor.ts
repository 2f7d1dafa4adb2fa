import type { Logger } from 'pino';
import type { InspectionEvent } from 'xstate';
import type { Clock } from '../clock/clock.ts';
import type { CoordinationOptions } from '../coordination/coordination-options.ts';
import type { ParsedEndpointConfig } from '../engines/endpoint-config.ts';
import type { Engine } from '../core/engine-types.ts';
import type { CallMemo } from '../runtime/agent-actors.ts';
import type { AgentDefinition } from '../runtime/agent-definition.ts';
import { createSupervisor, type Supervisor } from '../runtime/create-supervisor.ts';
import type { RuntimeConfigInput } from '../runtime/runtime-config.ts';
import type { SupervisorOptions } from '../runtime/supervisor-types.ts';
import type { AgentHandle, AskOptions } from '../runtime/agent-handle-types.ts';
import { type AgentMemory, emptyMemory, type Turn } from '../core/turn.ts';
import type { TurnExecutor } from './turn-executor.ts';

/** Options of {@link createBreakwaterExecutor}. */
export interface BreakwaterExecutorOptions {
  readonly config: RuntimeConfigInput;
  readonly agents: readonly AgentDefinition[];
  /** Memories restored from the last committed round (resume). Default: fresh memories. */
  readonly memories?: Readonly<Record<string, AgentMemory>>;
  /**
   * Agents restored from their stored actor snapshots (resume; wins over `memories`): the stored part of the
   * snapshot and the memory it goes with. Default none.
   */
  readonly restored?: Readonly<Record<string, { readonly snapshot: unknown; readonly memory: AgentMemory }>>;
  readonly clock: Clock;
  readonly logger?: Logger;
  readonly memo?: CallMemo;
  readonly createEngine?: (config: ParsedEndpointConfig) => Engine;
  /** How BYOK keys' engines read the wire, by template (see `SupervisorOptions.byokWire`). Default: unscaled. */
  readonly byokWire?: SupervisorOptions['byokWire'];
  readonly inspect?: (event: InspectionEvent) => void;
  /** Share tokens and endpoint health with other processes. Default: this process alone. */
  readonly coordination?: CoordinationOptions;
  /** Stream every turn (`agent.stream`): the same committed turns, and `onText` sees the text grow. Default false. */
  readonly stream?: boolean;
  /** With `stream`: an agent's current text of its running turn, after every change; `''` when the turn ends. */
  readonly onText?: (agent: string, text: string) => void;
  /** Random source for backoff jitter (a seeded one replays a run identically). Default Math.random. */
  readonly random?: () => number;
}

/** The breakwater policy as a {@link TurnExecutor}, with the supervisor exposed for the live view and visualizer. */
export interface BreakwaterExecutor extends TurnExecutor {
  readonly supervisor: Supervisor;
}

/**
 * Runs a scenario's turns through breakwater's supervisor: tiered chains, concurrency tokens, breakers,
 * cooldowns, pacing, retry budget, degraded layer; memories restored on resume.
 *
 * @example
 * ```ts
 * const executor = createBreakwaterExecutor({ config, agents, clock, memo: storeCallMemo(store, runId) });
 * const turn = await executor.ask({ agent: 'Kai', prompt, key, turnId: key, meta: { round: 1, itemId: 'U01' } });
 * ```
 */
export function createBreakwaterExecutor(options: BreakwaterExecutorOptions): BreakwaterExecutor {
  const supervisor = createSupervisor(options.config, {
    clock: options.clock,
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.memo ? { memo: options.memo } : {}),
    ...(options.createEngine ? { createEngine: options.createEngine } : {}),
    ...(options.byokWire ? { byokWire: options.byokWire } : {}),
    ...(options.inspect ? { inspect: options.inspect } : {}),
    ...(options.coordination ? { coordination: options.coordination } : {}),
    ...(options.random ? { random: options.random } : {}),
  });
  for (const def of options.agents) {
    const restored = options.restored?.[def.name];
    const memory = restored?.memory ?? options.memories?.[def.name];
    supervisor.spawnAgent(def, {
      ...(memory ? { memory } : {}),
      ...(restored ? { snapshot: restored.snapshot } : {}),
    });
  }
  const handle = (name: string) => {
    const h = supervisor.agent(name);
    if (!h) throw new Error(`no agent named "${name}" in this run`);
    return h;
  };
  return {
    policy: 'breakwater',
    supervisor,
    ask: (r) => {
      const ask = { turnId: r.turnId, key: r.key, meta: r.meta, ...(r.signal ? { signal: r.signal } : {}) };
      return options.stream
        ? streamed(handle(r.agent), r.prompt, ask, options.onText)
        : handle(r.agent).ask(r.prompt, ask);
    },
    memory: (agent) => supervisor.agent(agent)?.memory() ?? emptyMemory(),
    persistedSnapshot: (agent) => supervisor.agent(agent)?.persistedSnapshot(),
    health: () => ({ endpoints: supervisor.health(), tokens: supervisor.tokens() }),
    durableHealth: () => supervisor.durable.exportHealth(),
    settle: async () => {
      await options.memo?.settle?.();
    },
    subscribeEvents: (listener) => supervisor.subscribeEvents(listener),
    stop: () => supervisor.stop(),
  };
}

/** One streamed turn: its text as it grows goes to `onText`; resolves with the same turn `ask` would. */
async function streamed(
  agent: AgentHandle,
  prompt: string,
  ask: AskOptions,
  onText: ((agent: string, text: string) => void) | undefined,
): Promise<Turn> {
  const stream = agent.stream(prompt, ask);
  let text = '';
  for await (const e of stream) {
    if (e.type === 'endpoint') text = text.slice(0, e.kept);
    else if (e.type === 'step') text = '';
    else if (e.type === 'text') text += e.text;
    else continue;
    onText?.(agent.name, text);
  }
  onText?.(agent.name, '');
  return stream.turn;
}
