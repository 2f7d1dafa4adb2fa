import type { Clock } from '../../src/clock/clock.ts';
import type { Emulator } from '../../src/emulator/emulator-server.ts';
import type { EmulatorFlavor, EmulatorStats } from '../../src/emulator/emulator-types.ts';
import type { ParsedEndpointConfig } from '../../src/engines/endpoint-config.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import type { AgentDefinition } from '../../src/runtime/agent-definition.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import type { RuntimeConfigInput } from '../../src/runtime/runtime-config.ts';
import type { Turn } from '../../src/core/turn.ts';
import type { RunStore } from '../../src/store/run-store.ts';
import type { RunRecord, TurnInput } from '../../src/store/store-types.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

/*
 * Records a REAL run for the report tests: a supervisor with a few agents against a running emulator
 * (real SDKs, real HTTP), every runtime event collected through `onEvent`, wrapped in the run.* and
 * round.* events a round runner writes. The report is then checked against the emulator's own stats.
 */

/**
 * An endpoint on the emulator whose timeouts are far longer than any test: with a scaled clock the
 * SDK timeouts run on simulated time, and a slow (loaded) machine must not turn into timeout faults.
 */
export function testEndpoint(
  emulator: Emulator,
  id: string,
  flavor: EmulatorFlavor,
  model: string,
  apiKey?: string,
): ParsedEndpointConfig {
  return emulatorEndpoint(emulator, id, flavor, model, apiKey, {
    headersTimeoutMs: 3_600_000,
    idleTimeoutMs: 3_600_000,
  });
}

export interface RecordRunInput {
  readonly runId: string;
  readonly scenario: string;
  readonly emulator: Emulator;
  /** The same clock the emulator was started with (a scaled clock keeps cooldowns short). */
  readonly clock: Clock;
  readonly config: RuntimeConfigInput;
  readonly agents: readonly AgentDefinition[];
  /** Every agent answers every item, once per round. */
  readonly items: readonly string[];
  readonly rounds: number;
  /** Stored as `config.policy`. Default `breakwater`. */
  readonly policy?: string;
  /** Called once the supervisor exists (e.g. to attach a live view); the returned function runs at the end. */
  readonly attach?: (supervisor: Supervisor) => (() => void | Promise<void>) | undefined;
  /** Called after each finished turn, as a round runner reports progress. */
  readonly onProgress?: (p: { round: number; rounds: number; done: number; total: number }) => void;
}

export interface RecordedRun {
  /** The run as the store holds it once finished. */
  readonly run: RunRecord;
  /** Every event, in the order the runtime emitted them. */
  readonly events: readonly RuntimeEvent[];
  readonly turns: readonly Turn[];
  /** What `commitRound` gets, per round (index 0 = round 1). */
  readonly roundTurns: readonly (readonly TurnInput[])[];
  /** The emulator's own record of the calls it saw. */
  readonly stats: EmulatorStats;
}

function toTurnInput(turn: Turn, itemId: string): TurnInput {
  return {
    itemId,
    agent: turn.agent,
    prompt: turn.prompt,
    answer: turn.answer,
    // The store has no `cancelled`; a run that stopped mid-turn would not commit that turn anyway.
    outcome: turn.outcome === 'cancelled' ? 'failed' : turn.outcome,
    endpointId: turn.endpointId ?? null,
    degraded: turn.degraded,
    usage: turn.usage,
    faults: turn.faults,
    waitMs: turn.waitMs,
  };
}

/** Runs the agents over the items for the given rounds and returns everything the report reads. */
export async function recordRun(input: RecordRunInput): Promise<RecordedRun> {
  const { clock } = input;
  const events: RuntimeEvent[] = [];
  // Whole ms, as the run's event recorder stores them (a virtual clock's timers may fall between two).
  const supervisor = createSupervisor(input.config, {
    clock,
    onEvent: (e) => events.push(Number.isInteger(e.at) ? e : { ...e, at: Math.round(e.at) }),
  });
  const detach = input.attach?.(supervisor);
  const handles = input.agents.map((a) => supervisor.spawnAgent(a));
  const createdAt = Math.round(clock.now());
  events.push({
    type: 'run.started',
    at: createdAt,
    data: {
      runId: input.runId,
      scenario: input.scenario,
      rounds: input.rounds,
      agents: handles.map((h) => ({ name: h.name, tier: h.tier })),
      endpoints: supervisor.health().map((h) => h.id),
    },
  });
  const turns: Turn[] = [];
  const roundTurns: TurnInput[][] = [];
  const total = handles.length * input.items.length;
  for (let round = 1; round <= input.rounds; round++) {
    events.push({ type: 'round.started', at: Math.round(clock.now()), data: { round } });
    let done = 0;
    input.onProgress?.({ round, rounds: input.rounds, done, total });
    const finished = await Promise.all(
      handles.flatMap((h) =>
        input.items.map(async (itemId) => {
          const key = `${input.runId}:${round}:${itemId}:${h.name}`;
          const turn = await h.ask(`Round ${round}, item ${itemId}: what should we do?`, {
            turnId: key,
            key,
            meta: { round, itemId },
          });
          input.onProgress?.({ round, rounds: input.rounds, done: ++done, total });
          turns.push(turn);
          return toTurnInput(turn, itemId);
        }),
      ),
    );
    roundTurns.push(finished);
    events.push({
      type: 'round.committed',
      at: Math.round(clock.now()),
      data: { round, turns: finished.length },
    });
  }
  await supervisor.stop();
  await detach?.();
  const finishedAt = Math.round(clock.now());
  events.push({ type: 'run.finished', at: finishedAt, data: { runId: input.runId, status: 'completed' } });
  return {
    run: {
      runId: input.runId,
      scenario: input.scenario,
      config: { policy: input.policy ?? 'breakwater' },
      failure: null,
      status: 'completed',
      currentRound: input.rounds,
      totalRounds: input.rounds,
      machineVersion: 'agent@test',
      createdAt,
      updatedAt: finishedAt,
      finishedAt,
    },
    events,
    turns,
    roundTurns,
    stats: input.emulator.stats(),
  };
}

/**
 * Writes a recorded run to a store as a round runner would: the run, each round's turns committed,
 * every event appended in order, the final status.
 */
export async function writeRecordedRun(store: RunStore, recorded: RecordedRun): Promise<RunRecord> {
  const { run } = recorded;
  await store.createRun({
    runId: run.runId,
    scenario: run.scenario,
    config: run.config,
    totalRounds: run.totalRounds,
    machineVersion: run.machineVersion,
  });
  for (const [i, turns] of recorded.roundTurns.entries())
    await store.commitRound({ runId: run.runId, round: i + 1, turns });
  await store.appendEvents(
    run.runId,
    recorded.events.map((e, i) => ({
      seq: i + 1,
      at: e.at,
      type: e.type,
      agent: e.agent ?? null,
      endpoint: e.endpoint ?? null,
      data: e.data,
    })),
  );
  return store.setRunStatus(run.runId, 'completed');
}
