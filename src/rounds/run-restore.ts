import { z } from 'zod';
import { AGENT_MACHINE_VERSION } from '../../machines/agent.machine.ts';
import type { EndpointHealthExport } from '../health/endpoint-health.ts';
import { type AgentDefinition, isNoAgentDefinition } from '../runtime/agent-definition.ts';
import type { Supervisor } from '../runtime/create-supervisor.ts';
import type { AgentMemory, ToolResultRecord, Utterance } from '../runtime/turn.ts';
import type { RunStore } from '../store/run-store.ts';
import type { TurnRecord } from '../store/store-types.ts';

/** Answers the degraded layer's cache holds per agent (its default bound): a resume refiles at most these. */
export const RESTORED_ANSWERS_PER_AGENT = 500;

/** What a resumed run puts back before its first ask. */
export interface RunRestore {
  /** Per LLM agent: the stored part of its actor snapshot and its memory (utterances rebuilt from its turns). */
  readonly agents: Readonly<Record<string, { readonly snapshot: unknown; readonly memory: AgentMemory }>>;
  /** The endpoints' health committed with the last round, when there is one. */
  readonly health?: Readonly<Record<string, EndpointHealthExport>>;
  /** The good answers of the agents' last turns, oldest first, for the answer cache. */
  readonly answers: readonly { agent: string; prompt: string; answer: string; at?: number }[];
}

/** A stored health document that cannot be put back: the resume stops before changing anything. */
export class HealthRestoreError extends Error {
  readonly code = 'HEALTH_INVALID' as const;
  readonly runId: string;
  constructor(runId: string, detail: string) {
    super(
      `cannot restore the endpoint health of run "${runId}": the stored data is corrupt (${detail}); start a new run, or repair the last rounds.health`,
    );
    this.name = 'HealthRestoreError';
    this.runId = runId;
  }
}

/** Type guard for {@link HealthRestoreError}. */
export function isHealthRestoreError(e: unknown): e is HealthRestoreError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'HEALTH_INVALID';
}

const bucketSchema = z.object({
  capacity: z.number().optional(),
  holdUntil: z.number().optional(),
  used: z.array(z.tuple([z.number(), z.number()])),
});
const healthSchema = z.record(
  z.string(),
  z.object({
    breakerVersion: z.number(),
    breaker: z.unknown(),
    cooldownUntil: z.number(),
    disabledUntil: z.number(),
    disabledReason: z.string().optional(),
    consecutiveFaults: z.number(),
    rpm: bucketSchema,
    tpm: bucketSchema,
    aimd: z.number().optional(),
  }),
);

/**
 * Reads what a resume restores, validating it; reads only, so a refusal changes nothing:
 * - every LLM agent's state row (machine version and shape checked: `SnapshotRestoreError` naming run and agent),
 *   with its memory window rebuilt from its last `historyTurns` answered turns;
 * - the endpoints' health of the last committed round (`HealthRestoreError` when malformed);
 * - the last good answers of each agent for the degraded layer's answer cache.
 *
 * @example
 * ```ts
 * const restore = await loadRunRestore(store, runId, definitions, (d) => d.historyTurns ?? 6);
 * ```
 */
export async function loadRunRestore(
  store: RunStore,
  runId: string,
  definitions: readonly AgentDefinition[],
  historyTurns: (definition: AgentDefinition) => number,
): Promise<RunRestore> {
  const states = await store.loadAgentStates(runId, { machineVersion: AGENT_MACHINE_VERSION });
  const llm = definitions.filter((d) => !isNoAgentDefinition(d));
  // One read of each agent's last answered turns serves both its prompt window and the answer cache.
  const limit = Math.max(RESTORED_ANSWERS_PER_AGENT, ...llm.map(historyTurns));
  const recent = await store.recentTurns(runId, {
    agents: llm.map((d) => d.name),
    limit,
    outcomes: ['answered', 'fallback', 'degraded'],
  });
  const agents: Record<string, { snapshot: unknown; memory: AgentMemory }> = {};
  const answers: { agent: string; prompt: string; answer: string }[] = [];
  for (const d of llm) {
    const turns = recent[d.name] ?? [];
    const good = turns.filter((t) => t.outcome !== 'degraded');
    for (const t of good.slice(-RESTORED_ANSWERS_PER_AGENT))
      answers.push({ agent: d.name, prompt: textOf(t.prompt), answer: textOf(t.answer) });
    const state = states[d.name];
    if (!state) continue;
    const window = historyTurns(d);
    agents[d.name] = {
      snapshot: state.snapshot,
      memory: {
        utterances: window > 0 ? turns.slice(-window).map(utteranceOf) : [],
        slots: state.slots as Record<string, string>,
        toolResults: state.toolResults as ToolResultRecord[],
      },
    };
  }
  const stored = await store.lastHealth(runId);
  let health: Record<string, EndpointHealthExport> | undefined;
  if (stored !== undefined && stored !== null) {
    const parsed = healthSchema.safeParse(stored);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new HealthRestoreError(
        runId,
        `${issue?.path.map(String).join('.') ?? ''}: ${issue?.message ?? 'invalid'}`,
      );
    }
    health = parsed.data as Record<string, EndpointHealthExport>;
  }
  return { agents, ...(health ? { health } : {}), answers };
}

/** Puts the run-wide part of a restore (health, answer cache) into a freshly built runtime, before any ask. */
export function applyRunRestore(supervisor: Supervisor, restore: RunRestore): void {
  if (restore.health) supervisor.durable.restoreHealth(restore.health);
  supervisor.durable.restoreAnswers(restore.answers);
}

/** The utterance the agent's memory got when it finished this turn (see `finishTurn` in the agent machine). */
export function utteranceOf(t: TurnRecord): Utterance {
  const key = t.idempotencyKey ?? `${t.runId}:${t.round}:${t.itemId}:${t.agent}`;
  return {
    turnId: key,
    prompt: textOf(t.prompt),
    answer: textOf(t.answer),
    degraded: t.outcome === 'degraded',
    ...(t.endpointId && t.outcome !== 'degraded' ? { endpointId: t.endpointId } : {}),
  };
}

function textOf(doc: unknown): string {
  const text = (doc as { text?: unknown } | null)?.text;
  return typeof text === 'string' ? text : '';
}
