import type { Clock } from '../clock/clock.ts';
import type { CallMemo } from '../core/call-memo.ts';
import { createSeededRandom, hash32 } from '../core/seeded-random.ts';
import type { AgentDefinition } from '../runtime/agent-definition.ts';
import type { RuntimeConfigInput } from '../runtime/runtime-config.ts';
import type { ScenarioSpec } from '../scenarios/scenario-types.ts';
import { createBreakwaterExecutor } from './breakwater-executor.ts';
import { createStatusQuoExecutor } from './policies/status-quo-worker.ts';
import { applyRunRestore, type RunRestore } from './run-restore.ts';
import type { RunPolicy, RunScenarioOptions } from './run-scenario-options.ts';
import type { TurnExecutor } from './turn-executor.ts';
import type { WireTimeEngines } from './wire-time-engines.ts';

/** What the run's executor is built from. */
export interface ExecutorParts {
  readonly options: RunScenarioOptions;
  readonly spec: ScenarioSpec;
  readonly resolved: ScenarioSpec;
  readonly definitions: AgentDefinition[];
  readonly wire: WireTimeEngines;
  readonly clock: Clock;
  readonly memo: CallMemo;
  readonly restore: RunRestore | undefined;
}

/** The policy's executor: breakwater's runtime (its agents restored from the last commit), or seed 000's old worker. */
export function policyExecutor(policy: RunPolicy, parts: ExecutorParts): TurnExecutor {
  const { options, wire, clock, restore } = parts;
  const { createEngine: buildEngine, byokWire } = wire;
  if (policy === 'status-quo')
    return createStatusQuoExecutor(parts.resolved, {
      clock,
      ...(options.logger ? { logger: options.logger } : {}),
      ...(buildEngine ? { createEngine: buildEngine } : {}),
    });
  const breakwater = createBreakwaterExecutor({
    config: wire.withLease(parts.resolved.runtime) as RuntimeConfigInput,
    agents: parts.definitions,
    clock,
    memo: parts.memo,
    ...(restore ? { restored: restore.agents } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.inspect ? { inspect: options.inspect } : {}),
    ...(options.coordination ? { coordination: options.coordination } : {}),
    ...(options.stream ? { stream: true } : {}),
    ...(options.onText ? { onText: options.onText } : {}),
    // On a virtual clock the timeline must not depend on anything but the scenario: backoff
    // jitter comes from the scenario's seed instead of Math.random.
    ...(options.virtualTime ? { random: jitterRandom(parts.spec, options.jitterSeed) } : {}),
    ...(buildEngine ? { createEngine: buildEngine } : {}),
    ...(byokWire ? { byokWire } : {}),
  });
  if (restore) applyRunRestore(breakwater.supervisor, restore);
  return breakwater;
}

/** Backoff jitter from `seed`, else the scenario's emulator seed: a run on a virtual clock replays identically. */
function jitterRandom(spec: ScenarioSpec, seed: number | undefined): () => number {
  return createSeededRandom(hash32('breakwater backoff jitter', seed ?? spec.emulator?.seed ?? 1)).next;
}
