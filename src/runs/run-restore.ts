import { z } from 'zod';
import { AGENT_MACHINE_VERSION } from '../../machines/agent.machine.ts';
import type { EndpointHealthExport } from '../health/endpoint-health.ts';
import { type AgentDefinition, isNoAgentDefinition } from '../runtime/agent-definition.ts';
import type { Supervisor } from '../runtime/create-supervisor.ts';
import type { AgentMemory, ToolResultRecord, Utterance } from '../core/turn.ts';
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
    exportedAt: z.number().optional(),
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

/**
 * Puts the run-wide part of a restore (health, answer cache) into a freshly built runtime, before any ask. The
 * health goes on the runtime's clock first ({@link rebaseHealth}): a deadline or a paced unit never waits longer
 * than it would have in the run that stored it.
 */
export function applyRunRestore(supervisor: Supervisor, restore: RunRestore): void {
  if (restore.health) supervisor.durable.restoreHealth(rebaseHealth(restore.health, supervisor.clock.now()));
  supervisor.durable.restoreAnswers(restore.answers);
}

/** The slot a bucket's export stamps its units with (the end of 1/60 of the default minute), ms. */
const EXPORT_SLOT_MS = 1_000;

/**
 * Stored endpoint health moved onto a clock that reads `now`. Deadlines (cooldown, disable, breaker, provider
 * holds) and paced units are instants of the clock that stored them: a resumed run's clock starts at its last
 * recorded event, which can be earlier than the export (the events after the last commit were lost with the
 * process), and every instant then lay that much further ahead; across a dozen resumes the units stacked up in
 * the future and held every later turn's pacing past its max wait. When `now` is before the export, every instant
 * moves back by the difference, so each wait is what was left of it at the export; when it is after, the instants
 * stay (time passed, as it did for the provider). A document of an older release without `exportedAt` is dated
 * by the latest instant it proves had passed (its newest unit, opening or outcome).
 *
 * @example
 * ```ts
 * supervisor.durable.restoreHealth(rebaseHealth(stored, supervisor.clock.now()));
 * ```
 */
export function rebaseHealth(
  health: Readonly<Record<string, EndpointHealthExport>>,
  now: number,
): Record<string, EndpointHealthExport> {
  const out: Record<string, EndpointHealthExport> = {};
  for (const [id, h] of Object.entries(health)) {
    const at = h.exportedAt ?? provenPassed(h);
    const shift = at !== undefined && Number.isFinite(at) && now < at ? now - at : 0;
    out[id] = shift === 0 ? h : shiftHealth(h, shift);
  }
  return out;
}

type BucketExport = EndpointHealthExport['rpm'];
interface BreakerParts {
  readonly context?: {
    readonly openedAt?: number | null;
    readonly openUntil?: number | null;
    readonly outcomes?: readonly { readonly start: number }[];
  };
}

/** The latest instant an export without `exportedAt` shows had passed, or undefined if it shows none. */
function provenPassed(h: EndpointHealthExport): number | undefined {
  let latest = Number.NEGATIVE_INFINITY;
  for (const b of [h.rpm, h.tpm])
    for (const [at] of b.used ?? []) latest = Math.max(latest, at - EXPORT_SLOT_MS);
  const ctx = (h.breaker as BreakerParts | null)?.context;
  if (typeof ctx?.openedAt === 'number') latest = Math.max(latest, ctx.openedAt);
  for (const o of ctx?.outcomes ?? []) if (typeof o.start === 'number') latest = Math.max(latest, o.start);
  return Number.isFinite(latest) ? latest : undefined;
}

function shiftHealth(h: EndpointHealthExport, shift: number): EndpointHealthExport {
  // 0 means "none" for these deadlines: it stays 0.
  const move = (t: number) => (t > 0 ? t + shift : t);
  const bucket = (b: BucketExport): BucketExport => ({
    ...b,
    ...(b.holdUntil !== undefined ? { holdUntil: b.holdUntil + shift } : {}),
    used: (b.used ?? []).map(([at, units]) => [at + shift, units] as const),
  });
  const breaker = h.breaker as (BreakerParts & Record<string, unknown>) | null;
  const ctx = breaker?.context;
  return {
    ...h,
    cooldownUntil: move(h.cooldownUntil),
    disabledUntil: move(h.disabledUntil),
    rpm: bucket(h.rpm),
    tpm: bucket(h.tpm),
    ...(h.exportedAt !== undefined ? { exportedAt: h.exportedAt + shift } : {}),
    breaker:
      breaker && ctx
        ? {
            ...breaker,
            context: {
              ...ctx,
              ...(typeof ctx.openedAt === 'number' ? { openedAt: ctx.openedAt + shift } : {}),
              ...(typeof ctx.openUntil === 'number' ? { openUntil: ctx.openUntil + shift } : {}),
              ...(ctx.outcomes
                ? { outcomes: ctx.outcomes.map((o) => ({ ...o, start: o.start + shift })) }
                : {}),
            },
          }
        : h.breaker,
  };
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
