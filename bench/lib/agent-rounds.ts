import { type PeerAnswer, roundPrompt } from '../../src/runs/round-prompt.ts';
import { type AgentMemory, emptyMemory } from '../../src/core/turn.ts';
import type { LlmAgentDefinition } from '../../src/runtime/agent-definition.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';

/** When one round ended for each tier: simulated ms from the round's start to the tier's last finished turn. */
export interface RoundTail {
  readonly round: number;
  readonly spanMs: number;
  readonly doneByTierMs: Readonly<Record<string, number>>;
}

/** What a baseline's rounds gave: the makespan on the scenario's clock, the turns, and each round's tail. */
export interface AgentRoundsResult {
  /** Simulated ms (real ms × timeScale) from the first round's start to the last round's barrier. */
  readonly makespanMs: number;
  readonly realMs: number;
  readonly turns: number;
  readonly failedTurns: number;
  readonly rounds: readonly RoundTail[];
}

/** One turn of a baseline: the answer, or a throw when the turn failed. */
export type BaselineTurn = (
  agent: LlmAgentDefinition,
  key: string,
  prompt: string,
  memory: AgentMemory,
) => Promise<string>;

/**
 * Runs a rounds scenario the way breakwater's round runner does (`src/runs/round-runner.ts`), for the baselines
 * that call the SDKs themselves: every agent works the items in file order, one turn at a time; agents run in
 * parallel; a round ends at a barrier (every agent done) and the next round's prompts quote the answers of the
 * previous one (`roundPrompt`, the prompt breakwater's agents get). A failed turn has no answer and leaves the
 * agent's memory as it was. Time is real (the baselines sleep on real timers), reported × `timeScale`.
 */
export async function runAgentRounds(
  spec: ScenarioSpec,
  definitions: readonly LlmAgentDefinition[],
  prefix: string,
  turn: BaselineTurn,
): Promise<AgentRoundsResult> {
  const scale = spec.timeScale ?? 1;
  const items = spec.rounds!.items;
  const count = spec.rounds!.count;
  const tiers = spec.runtime.tiers ?? [];
  // An agent without a tier is in the lowest one (as breakwater's agents).
  const tierOf = (a: LlmAgentDefinition) => a.tier ?? tiers[tiers.length - 1] ?? 'default';
  const memories = new Map<string, AgentMemory>(definitions.map((d) => [d.name, emptyMemory(d.memory)]));
  const rounds: RoundTail[] = [];
  let turns = 0;
  let failedTurns = 0;
  const t0 = performance.now();
  let previous = new Map<string, PeerAnswer[]>();
  for (let round = 1; round <= count; round++) {
    const current = new Map<string, PeerAnswer[]>();
    const start = performance.now();
    const doneByTierMs: Record<string, number> = {};
    await Promise.all(
      definitions.map(async (agent) => {
        for (const item of items) {
          const key = `${prefix}:${round}:${item.id}:${agent.name}`;
          const peers = (previous.get(item.id) ?? []).filter((p) => p.agent !== agent.name);
          const prompt = roundPrompt(item, round, count, peers);
          turns++;
          let answer: string | undefined;
          try {
            answer = await turn(agent, key, prompt, memories.get(agent.name)!);
          } catch {
            failedTurns++;
          }
          const tier = tierOf(agent);
          doneByTierMs[tier] = Math.max(doneByTierMs[tier] ?? 0, (performance.now() - start) * scale);
          if (answer === undefined) continue;
          const memory = memories.get(agent.name)!;
          memories.set(agent.name, {
            ...memory,
            utterances: [...memory.utterances, { turnId: key, prompt, answer, degraded: false }],
          });
          const list = current.get(item.id) ?? [];
          list.push({ agent: agent.name, answer });
          current.set(item.id, list);
        }
      }),
    );
    rounds.push({ round, spanMs: Math.round((performance.now() - start) * scale), doneByTierMs });
    previous = current;
  }
  const realMs = performance.now() - t0;
  return { makespanMs: realMs * scale, realMs: Math.round(realMs), turns, failedTurns, rounds };
}
