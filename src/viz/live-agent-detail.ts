import type { Supervisor } from '../runtime/create-supervisor.ts';
import type { RunStore } from '../store/run-store.ts';
import { turnFromRecord, type VizAgentDetail, type VizTurn } from './viz-turn.ts';

/** Where a live agent's turns are read: the run's committed rounds when it is recorded, else its memory. */
export interface LiveDetailSource {
  readonly supervisor: Supervisor;
  readonly store: RunStore | undefined;
  readonly runId: string | undefined;
}

/** Turns and snapshot of one live agent; `undefined` for an unknown agent. */
export async function liveAgentDetail(
  { supervisor, store, runId }: LiveDetailSource,
  name: string,
  signal: AbortSignal | undefined,
): Promise<VizAgentDetail | undefined> {
  const handle = supervisor.agent(name);
  if (!handle) {
    // A stopped runtime has no agents; a run's turns are still in the store.
    if (!store || runId === undefined) return undefined;
    const records = await store.listTurns(runId, signal ? { signal } : {});
    const turns = records.filter((t) => t.agent === name).map(turnFromRecord);
    return turns.length > 0 ? { agent: name, turns, snapshot: null, memory: null } : undefined;
  }
  const memory = handle.memory();
  let turns: VizTurn[];
  if (store && runId !== undefined) {
    const records = await store.listTurns(runId, signal ? { signal } : {});
    turns = records.filter((t) => t.agent === name).map(turnFromRecord);
  } else {
    turns = memory.utterances.map((u) => ({
      turnId: u.turnId,
      round: null,
      itemId: null,
      prompt: u.prompt,
      answer: u.answer,
      outcome: u.degraded ? 'degraded' : 'answered',
      endpoint: u.endpointId ?? null,
      degraded: u.degraded,
      faults: [],
    }));
  }
  return { agent: name, turns, snapshot: handle.persistedSnapshot() ?? null, memory: memory.slots };
}
