import { SEED_DECISION_TREES } from '../../agents/seed-agents.ts';
import type { JsonSchema } from '../core/engine-types.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import type { AgentDefinition, AgentTool, NoAgentDefinition } from '../runtime/agent-definition.ts';
import type { ScenarioSpec } from './scenario-types.ts';

/** FNV-1a of a string: the only "randomness" the tools have, so the same arguments give the same result. */
function fnv(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** A number in [min, max] picked by the arguments (and a salt, so two fields of one result differ). */
function pick(args: Readonly<Record<string, unknown>>, salt: string, min: number, max: number): number {
  const h = fnv(`${salt}\u0000${JSON.stringify(args, Object.keys(args).sort())}`);
  return min + (h % (max - min + 1));
}

const str = (v: unknown, fallback: string): string =>
  typeof v === 'string' && v.trim() !== '' ? v.trim() : fallback;

function objectSchema(properties: Record<string, JsonSchema>, required: readonly string[]): JsonSchema {
  return { type: 'object', properties, required: [...required], additionalProperties: false };
}

function tool(
  description: string,
  parameters: JsonSchema,
  run: (args: Readonly<Record<string, unknown>>) => unknown,
): AgentTool {
  return Object.freeze({
    description,
    parameters,
    run: async (args: Readonly<Record<string, unknown>>) => run(args),
  });
}

const UNITS: Readonly<Record<string, string>> = { latency: 'ms', error_rate: '%', rpm: 'req/min', cpu: '%' };

/**
 * The built-in tools a scenario's agents can name (`tools: [lookup_metric, check_queue]`). Each is
 * deterministic: its result is derived from its arguments alone, so a replayed or resumed run sees the
 * same tool results, and the emulator's answers stay stable.
 *
 * - `lookup_metric {service, metric}` → a value, unit, 5-minute trend and threshold state.
 * - `read_runbook {topic}` → the runbook's steps and owner.
 * - `check_queue {queue}` → depth, oldest message age, consumers, dead letters.
 * - `search_incidents {query}` → up to three past incidents with how long they took to resolve.
 * - `check_quota {provider}` → requests/tokens per minute used and left, credit left.
 * - `fetch_market_data {symbol}` → last price, change, volume (for the seed-000 research agents).
 *
 * @example
 * ```ts
 * const result = await SCENARIO_TOOLS.check_queue!.run({ queue: 'payments' }, { signal, agent: 'Rex', idempotencyKey: 'k' });
 * // { queue: 'payments', depth: …, oldestAgeSec: …, consumers: …, deadLetters: … }
 * ```
 */
export const SCENARIO_TOOLS: Readonly<Record<string, AgentTool>> = Object.freeze({
  lookup_metric: tool(
    'Current value of one service metric (latency, error_rate, rpm, cpu) with its 5-minute trend.',
    objectSchema(
      {
        service: { type: 'string', description: 'service name, e.g. checkout' },
        metric: { type: 'string', enum: ['latency', 'error_rate', 'rpm', 'cpu'] },
      },
      ['service', 'metric'],
    ),
    (args) => {
      const metric = str(args.metric, 'latency');
      const value = pick(args, 'value', 1, 100) * (metric === 'latency' ? 12 : 1);
      const trend = ['rising', 'flat', 'falling'][pick(args, 'trend', 0, 2)];
      return {
        service: str(args.service, 'unknown'),
        metric,
        value,
        unit: UNITS[metric] ?? 'count',
        window: '5m',
        trend,
        breaching: pick(args, 'breach', 0, 3) === 0,
      };
    },
  ),
  read_runbook: tool(
    'The runbook for an operational topic: ordered steps and the owning team.',
    objectSchema({ topic: { type: 'string', description: 'e.g. "429 storm", "credit exhausted"' } }, [
      'topic',
    ]),
    (args) => {
      const topic = str(args.topic, 'general');
      const steps = [
        'confirm the blast radius on the status dashboard',
        'shed non-critical load (pause batch and no-LLM crons first)',
        'fail over to the backup engine pool',
        'page the owning team if error rate stays above 5 % for 10 minutes',
        'write the incident note and schedule the review',
      ];
      const n = pick(args, 'steps', 3, steps.length);
      const owners = ['platform', 'sre', 'payments', 'data', 'security'];
      return { topic, owner: owners[pick(args, 'owner', 0, owners.length - 1)], steps: steps.slice(0, n) };
    },
  ),
  check_queue: tool(
    'Depth and health of a work queue.',
    objectSchema({ queue: { type: 'string', description: 'queue name' } }, ['queue']),
    (args) => ({
      queue: str(args.queue, 'default'),
      depth: pick(args, 'depth', 0, 5_000),
      oldestAgeSec: pick(args, 'age', 0, 1_800),
      consumers: pick(args, 'consumers', 0, 12),
      deadLetters: pick(args, 'dlq', 0, 40),
    }),
  ),
  search_incidents: tool(
    'Past incidents matching a query, most similar first.',
    objectSchema({ query: { type: 'string' } }, ['query']),
    (args) => {
      const query = str(args.query, '');
      const count = pick(args, 'count', 1, 3);
      return {
        query,
        matches: Array.from({ length: count }, (_, i) => ({
          id: `INC-${pick(args, `id${i}`, 1000, 9999)}`,
          title: `${query || 'incident'} (${['partial outage', 'degraded latency', 'quota exhaustion'][i]})`,
          resolvedInMin: pick(args, `ttr${i}`, 5, 240),
        })),
      };
    },
  ),
  check_quota: tool(
    'Rate-limit and credit headroom of one LLM provider account.',
    objectSchema({ provider: { type: 'string', enum: ['openai', 'anthropic', 'gemini', 'vllm'] } }, [
      'provider',
    ]),
    (args) => {
      const rpmLimit = pick(args, 'rpm', 3, 12) * 10;
      const tpmLimit = rpmLimit * 1_000;
      return {
        provider: str(args.provider, 'openai'),
        rpmLimit,
        rpmUsed: pick(args, 'rpmUsed', 0, rpmLimit),
        tpmLimit,
        tpmUsed: pick(args, 'tpmUsed', 0, tpmLimit),
        creditLeftPct: pick(args, 'credit', 0, 100),
      };
    },
  ),
  fetch_market_data: tool(
    'Last price, change and volume of a ticker, index or bond.',
    objectSchema({ symbol: { type: 'string', description: 'e.g. KOSPI, UST10Y, 005930' } }, ['symbol']),
    (args) => ({
      symbol: str(args.symbol, 'KOSPI'),
      last: pick(args, 'last', 1_000, 400_000) / 100,
      changePct: (pick(args, 'chg', 0, 800) - 400) / 100,
      volume: pick(args, 'vol', 10_000, 9_000_000),
      asOf: 'previous close',
    }),
  ),
});

/**
 * Names of the built-in tools, sorted.
 *
 * @example
 * ```ts
 * SCENARIO_TOOL_NAMES.includes('check_queue'); // true
 * ```
 */
export const SCENARIO_TOOL_NAMES: readonly string[] = Object.freeze(Object.keys(SCENARIO_TOOLS).sort());

/**
 * The built-in tool of that name, or `undefined`.
 *
 * @example
 * ```ts
 * scenarioTool('read_runbook')?.description; // 'The runbook for an operational topic: …'
 * ```
 */
export function scenarioTool(name: string): AgentTool | undefined {
  return Object.hasOwn(SCENARIO_TOOLS, name) ? SCENARIO_TOOLS[name] : undefined;
}

/**
 * What a scenario's plain-code (`noAgent`) agent does: the seed-000 outbox flusher and its kind — no
 * LLM, a deterministic summary of the work it was given.
 */
function plainWork(name: string): NoAgentDefinition['run'] {
  return async (input) => {
    const handled = fnv(`${name}\u0000${input}`) % 7;
    return { ok: true, job: name, work: input, handled };
  };
}

/**
 * Turns a scenario's agents into runtime agent definitions: roles, tiers, chains, memory slots and
 * limits carried over; tools resolved by name from {@link SCENARIO_TOOLS}; `noAgent` agents become
 * plain-code work. An unknown tool name is refused with a {@link ConfigError} naming the agent and
 * the tool (`loadScenario` already refuses it with the file's line; this guards hand-built specs).
 *
 * @example
 * ```ts
 * const spec = loadScenario('scenarios/agent8-storm');
 * const supervisor = createSupervisor(scenarioRuntimeConfig(spec, { baseURL: (f) => emu.baseURL(f) }));
 * const agents = scenarioAgents(spec).map((d) => supervisor.spawnAgent(d));
 * ```
 */
export function scenarioAgents(spec: ScenarioSpec): AgentDefinition[] {
  return spec.agents.map((a, i): AgentDefinition => {
    if (a.noAgent) {
      return { name: a.name, noAgent: true, ...(a.tier ? { tier: a.tier } : {}), run: plainWork(a.name) };
    }
    if (!a.chain) {
      throw new ConfigError({
        source: `scenario "${spec.name}"`,
        path: `agents[${i}].chain`,
        message: `agent "${a.name}" needs a chain (one of runtime.chains), or noAgent: true for plain-code work`,
      });
    }
    const tools: Record<string, AgentTool> = {};
    (a.tools ?? []).forEach((name, j) => {
      const t = scenarioTool(name);
      if (!t) {
        throw new ConfigError({
          source: `scenario "${spec.name}"`,
          path: `agents[${i}].tools[${j}]`,
          message: `names tool "${name}", which is not a built-in scenario tool; use one of ${SCENARIO_TOOL_NAMES.join(', ')}`,
        });
      }
      tools[name] = t;
    });
    return {
      name: a.name,
      chain: a.chain,
      ...(a.role !== undefined ? { role: a.role } : {}),
      ...(a.tier !== undefined ? { tier: a.tier } : {}),
      ...(a.memory ? { memory: { ...a.memory } } : {}),
      ...(Object.keys(tools).length > 0 ? { tools } : {}),
      ...(a.maxWaitMs !== undefined ? { maxWaitMs: a.maxWaitMs } : {}),
      ...(a.maxTokens !== undefined ? { maxTokens: a.maxTokens } : {}),
      // Decision trees are code, not YAML: an agent of the same name in agents/ brings its own.
      ...(SEED_DECISION_TREES[a.name] ? { decisionTree: SEED_DECISION_TREES[a.name] } : {}),
    };
  });
}
