import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import { type Clock, sleep } from '../../clock/clock.ts';
import type { EmulatorFlavor } from '../../emulator/emulator-types.ts';
import { createEngine as createAdapterEngine } from '../../engines/create-engine.ts';
import {
  type EndpointConfig,
  type ParsedEndpointConfig,
  parseEndpointConfig,
} from '../../engines/endpoint-config.ts';
import type { Engine, EngineResult } from '../../core/engine-types.ts';
import { NO_USAGE } from '../../core/token-usage.ts';
import type { RuntimeEvent, RuntimeEventListener } from '../../core/runtime-event.ts';
import { type Fault, isEngineFaultError } from '../../core/fault.ts';
import { createLogger } from '../../logging/logger.ts';
import { scrubSecrets } from '../../redact/secret-scrubber.ts';
import type { TurnExecutor, TurnRequest } from '../turn-executor.ts';
import { buildRequest } from '../../runtime/prompt-builder.ts';
import { type AgentMemory, emptyMemory, type Turn, type TurnOutcome } from '../../core/turn.ts';
import { scenarioEndpoints } from '../../scenarios/scenario-endpoints.ts';
import type { ScenarioAgent, ScenarioSpec } from '../../scenarios/scenario-types.ts';
import {
  type ChainLink,
  resolveStatusQuoChain,
  STATUS_QUO_BACKOFF_MS,
  STATUS_QUO_MODELS,
} from './status-quo-chain.ts';
import { WorkerPool } from './worker-pool.ts';

export { STATUS_QUO_BACKOFF_MS, STATUS_QUO_MODELS } from './status-quo-chain.ts';

/**
 * The exact line seed 000's worker wrote when `_eligible_model_chain()` came back empty.
 *
 * @example
 * ```ts
 * events.filter((e) => e.type === 'policy.log' && e.data.message === ALL_COOLING_MESSAGE).length;
 * ```
 */
export const ALL_COOLING_MESSAGE = 'all candidate models are cooling down';

/** Options of {@link createStatusQuoExecutor}. */
export interface StatusQuoOptions {
  /** The run's clock: blocking sleeps, cooldowns and call times are read on it. Required. */
  readonly clock: Clock;
  /** pino logger; one `confirmed_model=<provider>/<model>` line per answer, as the seed's log had. Default: {@link createLogger}. */
  readonly logger?: Logger;
  /** Builds an endpoint's engine. Default: the unified adapter (`createEngine`, SDK retries off). */
  readonly createEngine?: (config: ParsedEndpointConfig) => Engine;
  /**
   * Base URL of the emulator listener of a flavor, for endpoints that still carry `emulator:` (a spec as
   * loaded). Default: none — the caller has already resolved every endpoint's `baseURL`.
   */
  readonly baseURL?: (flavor: EmulatorFlavor) => string;
  /**
   * Threads of the old worker's pool: tasks that run at once, each holding its thread through its blocking
   * sleeps. Default `Infinity`: every firing runs at once. Seed 000 does not give the pool size; what it
   * does say is that the old worker had no limit in front of the LLM (six agents hit the 429 together),
   * so unlimited threads is the reading that reproduces its failure without inventing a number. Give a
   * finite size to also see the thread starvation it warned about (new tasks wait behind sleeping ones).
   */
  readonly workers?: number;
  /** Blocking sleeps between rounds of attempts. Default {@link STATUS_QUO_BACKOFF_MS} (30 s, 60 s, 120 s). */
  readonly backoffMs?: readonly number[];
  /**
   * How long an HTTP 429 puts a model into `_MODEL_COOLDOWN_UNTIL`, ms — or the Retry-After, if longer.
   * Default 60 000 (the seed gives no number; one minute is the common choice and keeps a model out of
   * every chain for longer than the first 30 s sleep, which is what turned one 429 into "all candidate
   * models are cooling down").
   */
  readonly cooldownMs?: number;
  /** The chain's models, in order, looked up among the scenario's endpoints. Default {@link STATUS_QUO_MODELS}. */
  readonly models?: readonly string[];
}

interface AgentSlot {
  readonly spec: ScenarioAgent;
  readonly tier: string;
  memory: AgentMemory;
  calling: number;
  sleeping: number;
  queued: number;
  state: string;
}

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

  const setState = (slot: AgentSlot) => {
    const next =
      slot.calling > 0 ? 'calling' : slot.sleeping > 0 ? 'cooling' : slot.queued > 0 ? 'queued' : 'idle';
    if (next === slot.state) return;
    const previous = slot.state;
    slot.state = next;
    emit({ type: 'agent.state', at: clock.now(), agent: slot.spec.name, data: { state: next, previous } });
  };

  const eligibleModelChain = (): ChainLink[] =>
    chain.filter((link) => (_MODEL_COOLDOWN_UNTIL.get(link.model) ?? 0) <= clock.now());

  const recordAttempt = (slot: AgentSlot, link: ChainLink, startedAt: number, fault?: Fault) => {
    const at = clock.now();
    emit({
      type: 'call.attempt',
      at,
      agent: slot.spec.name,
      endpoint: link.endpoint.id,
      data: {
        tier: slot.tier,
        outcome: fault ? 'fault' : 'ok',
        startedAt,
        latencyMs: at - startedAt,
        provider: link.endpoint.provider,
        model: link.model,
        ...(fault
          ? {
              faultKind: fault.kind,
              ...(fault.status !== undefined ? { status: fault.status } : {}),
              ...(fault.retryAfterMs !== undefined ? { retryAfterMs: fault.retryAfterMs } : {}),
            }
          : { status: 200 }),
      },
    });
  };

  /** One upstream attempt; a 429 writes the model into the worker-wide cooldown map. */
  const attempt = async (
    slot: AgentSlot,
    link: ChainLink,
    request: TurnRequest,
    n: number,
    signal: AbortSignal,
  ): Promise<EngineResult | Fault> => {
    const startedAt = clock.now();
    slot.calling++;
    setState(slot);
    try {
      const built = buildRequest({
        ...(slot.spec.role !== undefined ? { role: slot.spec.role } : {}),
        memory: slot.memory,
        historyTurns,
        turnMessages: [{ role: 'user', content: request.prompt }],
        tools: [],
        maxTokens: slot.spec.maxTokens ?? defaultMaxTokens,
        idempotencyKey: `${request.key}:${n}`,
      });
      const result = await engineFor(link.endpoint).call({ ...built, signal });
      recordAttempt(slot, link, startedAt);
      logger.info(
        { agent: slot.spec.name, confirmed_model: `${link.endpoint.provider}/${link.model}` },
        `confirmed_model=${link.endpoint.provider}/${link.model}`,
      );
      return result;
    } catch (e) {
      const fault: Fault = isEngineFaultError(e)
        ? e.fault
        : { kind: 'bad_request', provider: link.endpoint.provider, message: scrubSecrets(String(e)) };
      recordAttempt(slot, link, startedAt, fault);
      if (fault.status === 429 || fault.kind === 'rate_limited') {
        const until = clock.now() + Math.max(cooldownMs, fault.retryAfterMs ?? 0);
        _MODEL_COOLDOWN_UNTIL.set(link.model, Math.max(_MODEL_COOLDOWN_UNTIL.get(link.model) ?? 0, until));
        logger.warn({ agent: slot.spec.name, model: link.model, until }, 'model cooling down (process-wide)');
      }
      return fault;
    } finally {
      slot.calling--;
      setState(slot);
    }
  };

  const runTask = async (slot: AgentSlot, request: TurnRequest, askedAt: number, signal: AbortSignal) => {
    const faults: Fault[] = [];
    let attempts = 0;
    /** Time spent in upstream calls; the rest of the turn was waiting (for a thread, or asleep). */
    let callTime = 0;
    const finish = (outcome: TurnOutcome, extra: Partial<Turn> = {}): Turn => ({
      turnId: request.turnId,
      agent: slot.spec.name,
      tier: slot.tier,
      prompt: request.prompt,
      answer: { text: '' },
      outcome,
      degraded: false,
      faults,
      waitMs: clock.now() - askedAt - callTime,
      attempts,
      usage: NO_USAGE,
      messages: [],
      startedAt: askedAt,
      finishedAt: clock.now(),
      ...extra,
    });
    for (let round = 0; ; round++) {
      const eligible = eligibleModelChain();
      if (eligible.length === 0) {
        emit({
          type: 'policy.log',
          at: clock.now(),
          agent: slot.spec.name,
          data: { message: ALL_COOLING_MESSAGE, tier: slot.tier },
        });
        logger.error({ agent: slot.spec.name }, ALL_COOLING_MESSAGE);
        return finish('failed', { error: ALL_COOLING_MESSAGE });
      }
      for (const link of eligible) {
        const callStart = clock.now();
        const outcome = await attempt(slot, link, request, attempts++, signal);
        callTime += clock.now() - callStart;
        if (!('kind' in outcome)) {
          const fallback = chain.indexOf(link) > 0;
          slot.memory = {
            ...slot.memory,
            utterances: [
              ...slot.memory.utterances,
              {
                turnId: request.turnId,
                prompt: request.prompt,
                answer: outcome.text,
                endpointId: link.endpoint.id,
                degraded: false,
              },
            ],
          };
          return finish(fallback ? 'fallback' : 'answered', {
            answer: { text: outcome.text },
            endpointId: link.endpoint.id,
            model: outcome.model,
            usage: outcome.usage,
          });
        }
        faults.push(outcome);
        if (outcome.kind === 'cancelled' || signal.aborted)
          return finish('cancelled', { error: 'cancelled' });
      }
      const delay = backoff[round];
      if (delay === undefined) {
        const last = faults[faults.length - 1];
        return finish('failed', {
          error: `every model failed after ${backoff.length} retries (last: ${last?.kind ?? 'unknown'}${last?.status ? ` ${last.status}` : ''})`,
        });
      }
      slot.sleeping++;
      setState(slot);
      try {
        // time.sleep() in the worker thread: the thread is held, nothing else runs on it.
        await sleep(clock, delay, signal);
      } catch {
        return finish('cancelled', { error: 'cancelled' });
      } finally {
        slot.sleeping--;
        setState(slot);
      }
    }
  };

  const ask = async (request: TurnRequest): Promise<Turn> => {
    const slot = agents.get(request.agent);
    if (!slot) throw new Error(`no agent named "${request.agent}" in this run`);
    const signal = request.signal ? AbortSignal.any([request.signal, stopping.signal]) : stopping.signal;
    const askedAt = clock.now();
    slot.queued++;
    setState(slot);
    let turn: Turn;
    try {
      await pool.acquire(signal);
    } catch {
      slot.queued--;
      setState(slot);
      turn = cancelledTurn(slot, request, askedAt, clock.now());
      emitTurn(turn, request);
      return turn;
    }
    slot.queued--;
    try {
      turn = await runTask(slot, request, askedAt, signal);
    } finally {
      pool.release();
      setState(slot);
    }
    emitTurn(turn, request);
    return turn;
  };

  const emitTurn = (turn: Turn, request: TurnRequest) => {
    emit({
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
  };

  return {
    policy: 'status-quo',
    ask(request) {
      const p = ask(request);
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
