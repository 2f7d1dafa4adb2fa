import { setMaxListeners } from 'node:events';
import { createEngine as createAdapterEngine } from '../../engines/create-engine.ts';
import {
  type EndpointConfig,
  type ParsedEndpointConfig,
  parseEndpointConfig,
} from '../../engines/endpoint-config.ts';
import type { Engine } from '../../core/engine-types.ts';
import { NO_USAGE } from '../../core/token-usage.ts';
import type { RuntimeEvent, RuntimeEventListener } from '../../core/runtime-event.ts';
import { createLogger } from '../../logging/logger.ts';
import type { TurnExecutor, TurnRequest } from '../turn-executor.ts';
import { emptyMemory, type Turn } from '../../core/turn.ts';
import { scenarioEndpoints } from '../../scenarios/scenario-endpoints.ts';
import type { ScenarioSpec } from '../../scenarios/scenario-types.ts';
import { resolveStatusQuoChain, STATUS_QUO_BACKOFF_MS, STATUS_QUO_MODELS } from './status-quo-chain.ts';
import type { StatusQuoOptions } from './status-quo-options.ts';
import { type AgentSlot, createAgentSlots, type StatusQuoParts, setSlotState } from './status-quo-state.ts';
import { runTask } from './status-quo-task.ts';
import { WorkerPool } from './worker-pool.ts';

export { STATUS_QUO_BACKOFF_MS, STATUS_QUO_MODELS } from './status-quo-chain.ts';
export type { StatusQuoOptions } from './status-quo-options.ts';
export { ALL_COOLING_MESSAGE } from './status-quo-task.ts';

/**
 * Seed 000's agent queue worker as it was, as a {@link TurnExecutor} (policy `status-quo`), so the same
 * scenario shows the old failure beside breakwater's result and the same report reads both:
 *
 * - one `_MODEL_COOLDOWN_UNTIL` map for the whole worker, keyed by MODEL NAME: one agent's 429 on
 *   `claude-sonnet-4-6` takes that model out of every agent's chain (the domino);
 * - one two-model chain for every agent, `[openai-codex/gpt-5.5 → anthropic/claude-sonnet-4-6]` (the
 *   scenario's endpoints with those models), `fallback_providers: []`;
 * - `_eligible_model_chain()` drops cooling models; when none is left the task fails at once with
 *   "all candidate models are cooling down" (a `policy.log` event with exactly that message);
 * - `_call_llm_with_guardrails()` tries the eligible models, then BLOCKS its thread for 30 s, 60 s,
 *   120 s between rounds of attempts (210 s worst case) and fails after the last;
 * - no semaphore: every call goes upstream at once; every cron goes through the LLM (noAgent jobs too);
 * - SDK-level engines with the SDK's retries off.
 *
 * It emits the runtime events breakwater emits (`call.attempt` per upstream attempt, `turn.completed`,
 * `agent.state`, `policy.log`). The "process" is this executor: two executors do not share cooldowns.
 *
 * @example
 * ```ts
 * const executor = createStatusQuoExecutor(spec, { clock, baseURL: (f) => emulator.baseURL(f) });
 * executor.subscribeEvents((e) => events.push(e));
 * const turn = await executor.ask({ agent: 'codex', prompt: 'daily-heartbeat', key: 'run:1:hb@07:00:codex', turnId: 'hb', meta: {} });
 * turn.outcome; // 'answered' | 'fallback' | 'failed'
 * ```
 */
export function createStatusQuoExecutor(spec: ScenarioSpec, options: StatusQuoOptions): TurnExecutor {
  const { clock } = options;
  const logger = options.logger ?? createLogger();
  const backoff = options.backoffMs ?? STATUS_QUO_BACKOFF_MS;
  const cooldownMs = options.cooldownMs ?? 60_000;
  const endpoints = scenarioEndpoints(spec, options.baseURL ? { baseURL: options.baseURL } : {}).map(
    (e: EndpointConfig) => parseEndpointConfig(e, `scenario "${spec.name}" endpoint "${e.id}"`),
  );
  const chain = resolveStatusQuoChain(spec, endpoints, options.models ?? STATUS_QUO_MODELS);
  const build = options.createEngine ?? ((c: ParsedEndpointConfig) => createAdapterEngine(c, { clock }));
  const engines = new Map<string, Engine>();
  const engineFor = (c: ParsedEndpointConfig) => {
    let e = engines.get(c.id);
    if (!e) {
      e = build(c);
      engines.set(c.id, e);
    }
    return e;
  };

  const agents = createAgentSlots(spec);
  const historyTurns = spec.runtime.agentDefaults?.historyTurns ?? 6;
  const defaultMaxTokens = spec.runtime.agentDefaults?.maxTokens ?? 512;

  // The seed's own name: one map for the whole worker, every agent reads and writes it.
  const _MODEL_COOLDOWN_UNTIL = new Map<string, number>();
  const pool = new WorkerPool(options.workers);
  const listeners = new Set<RuntimeEventListener>();
  const emit = (e: RuntimeEvent) => {
    for (const l of listeners) l(e);
  };
  const stopping = new AbortController();
  // Every task in flight listens to it (unlimited threads: possibly hundreds at once).
  setMaxListeners(0, stopping.signal);
  const inFlight = new Set<Promise<unknown>>();
  const parts: StatusQuoParts = {
    clock,
    logger,
    chain,
    _MODEL_COOLDOWN_UNTIL,
    cooldownMs,
    backoff,
    historyTurns,
    defaultMaxTokens,
    engineFor,
    emit,
  };

  return {
    policy: 'status-quo',
    ask(request) {
      const p = ask(parts, agents, pool, stopping.signal, request);
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p)).catch(() => {});
      return p;
    },
    memory: (agent) => agents.get(agent)?.memory ?? emptyMemory(),
    persistedSnapshot: () => undefined,
    health: () => ({
      policy: 'status-quo',
      cooldowns: Object.fromEntries(_MODEL_COOLDOWN_UNTIL),
      chain: chain.map((l) => ({ endpointId: l.endpoint.id, model: l.model })),
      workers: { limit: Number.isFinite(pool.size) ? pool.size : null, busy: pool.busy, queued: pool.queued },
    }),
    subscribeEvents(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async stop() {
      stopping.abort(new Error('status-quo executor stopped'));
      await Promise.allSettled([...inFlight]);
    },
  };
}

/** One task: queued for a thread of the pool, then run on it; its `turn.completed` emitted either way. */
async function ask(
  parts: StatusQuoParts,
  agents: ReadonlyMap<string, AgentSlot>,
  pool: WorkerPool,
  stopping: AbortSignal,
  request: TurnRequest,
): Promise<Turn> {
  const { clock } = parts;
  const slot = agents.get(request.agent);
  if (!slot) throw new Error(`no agent named "${request.agent}" in this run`);
  const signal = request.signal ? AbortSignal.any([request.signal, stopping]) : stopping;
  const askedAt = clock.now();
  slot.queued++;
  setSlotState(slot, parts);
  let turn: Turn;
  try {
    await pool.acquire(signal);
  } catch {
    slot.queued--;
    setSlotState(slot, parts);
    turn = cancelledTurn(slot, request, askedAt, clock.now());
    emitTurn(parts, turn, request);
    return turn;
  }
  slot.queued--;
  try {
    turn = await runTask(parts, slot, request, askedAt, signal);
  } finally {
    pool.release();
    setSlotState(slot, parts);
  }
  emitTurn(parts, turn, request);
  return turn;
}

function emitTurn(parts: Pick<StatusQuoParts, 'emit'>, turn: Turn, request: TurnRequest): void {
  parts.emit({
    type: 'turn.completed',
    at: turn.finishedAt,
    agent: turn.agent,
    data: {
      turnId: turn.turnId,
      tier: turn.tier,
      ...(request.meta.round !== undefined ? { round: request.meta.round } : {}),
      ...(request.meta.itemId !== undefined ? { itemId: request.meta.itemId } : {}),
      outcome: turn.outcome,
      degraded: false,
      waitMs: turn.waitMs,
      attempts: turn.attempts,
      faults: turn.faults.map((f) => f.kind),
      startedAt: turn.startedAt,
    },
  });
}

function cancelledTurn(slot: AgentSlot, request: TurnRequest, startedAt: number, now: number): Turn {
  return {
    turnId: request.turnId,
    agent: slot.spec.name,
    tier: slot.tier,
    prompt: request.prompt,
    answer: { text: '' },
    outcome: 'cancelled',
    degraded: false,
    faults: [],
    waitMs: now - startedAt,
    attempts: 0,
    usage: NO_USAGE,
    messages: [],
    startedAt,
    finishedAt: now,
    error: 'cancelled',
  };
}
