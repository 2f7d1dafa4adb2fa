import { ConfigError } from '../core/errors/config-error.ts';
import { SEED_THRESHOLDS } from '../report/run-report.ts';
import { scheduleWindow } from '../scenarios/round-planner.ts';
import type { ScenarioAgent, ScenarioSpec } from '../scenarios/scenario-types.ts';
import type { PlanInput, PlanJob } from './plan-types.ts';
import type { RunEstimates } from './run-estimates.ts';

/** Mean call length when a scenario declares no emulator latency, seconds. */
const DEFAULT_CALL_SECONDS = 6;
/** The emulator's answer size when its profile does not say, tokens (its own default). */
const DEFAULT_ANSWER_TOKENS = 60;

/** Options of {@link scenarioPlanInput}. */
export interface ScenarioPlanOptions {
  /** Names the scenario in errors (its file). Default `scenario "<name>"`. */
  readonly source?: string;
  /**
   * Measured costs from a stored run (`estimatesFromRun`): an agent measured there takes its calls per
   * turn and tokens per call from it (a job's own agent `codex@light` reads `codex`), and the run's mean
   * call length replaces the emulator's. Default: the scenario's declared sizes.
   */
  readonly estimates?: RunEstimates;
}

/**
 * Tokens one call of an agent's job asks the limiter for, as the runtime reserves them: the prompt
 * (role, memory slots, the job's text, its earlier answers) at chars ÷ 4, plus the output cap.
 */
function tokensPerCall(spec: ScenarioSpec, agent: ScenarioAgent, prompt: string): number {
  const defaults = spec.runtime.agentDefaults as { maxTokens?: number; historyTurns?: number } | undefined;
  const answer = spec.emulator?.answerTokens ?? DEFAULT_ANSWER_TOKENS;
  const memory = Object.entries(agent.memory ?? {}).reduce((n, [k, v]) => n + k.length + v.length + 2, 0);
  const chars = (agent.role?.length ?? 0) + memory + prompt.length;
  const history = (defaults?.historyTurns ?? 6) * answer;
  return Math.ceil(chars / 4) + history + (agent.maxTokens ?? defaults?.maxTokens ?? 512);
}

/**
 * Reads a scheduled scenario as the planner's plain input: its window and zone; its endpoints with
 * their declared `limits` (RPM, TPM); its chains; `runtime.concurrency.limit` as the global tokens;
 * the emulator's mean latency as the call length; the sonnet budget from
 * `report.thresholds.sonnetPerHour` (seed 000's 20 when absent; `null` drops it); and each job's
 * estimates: one LLM call per firing (two for an agent with tools: the call and the one after the tool
 * result), its tokens as the runtime reserves them, its agent's tier as its priority, operational when
 * that tier is not one of `report.analysisTiers`.
 *
 * @example
 * ```ts
 * const input = scenarioPlanInput(loadScenario('morning-peak-before-fixes'));
 * input.budgets; // [{ name: 'sonnet calls per hour', match: 'sonnet', limit: 20 }]
 * ```
 */
export function scenarioPlanInput(spec: ScenarioSpec, options: ScenarioPlanOptions = {}): PlanInput {
  const source = options.source ?? `scenario "${spec.name}"`;
  const schedule = spec.schedule;
  if (!schedule)
    throw new ConfigError({
      source,
      path: 'schedule',
      message:
        'has no schedule: to plan; `breakwater plan` reads cron jobs (rounds: work runs as soon as it can)',
    });
  const origin = spec.start ? Date.parse(spec.start) : Date.now();
  const { from, to } = scheduleWindow(schedule, origin);
  const agents = new Map(spec.agents.map((a) => [a.name, a]));
  const tiers = (spec.runtime.tiers as readonly string[] | undefined) ?? ['analysis', 'ops'];
  const analysis = spec.report?.analysisTiers ?? ['analysis'];
  const sonnet =
    spec.report?.thresholds && 'sonnetPerHour' in spec.report.thresholds
      ? spec.report.thresholds.sonnetPerHour
      : SEED_THRESHOLDS.sonnetPerHour;
  const latency = spec.emulator?.latency;
  const callSeconds =
    latency && (latency.minMs !== undefined || latency.maxMs !== undefined)
      ? Math.max(
          0.001,
          ((latency.minMs ?? latency.maxMs ?? 0) + (latency.maxMs ?? latency.minMs ?? 0)) / 2000,
        )
      : DEFAULT_CALL_SECONDS;
  const concurrency = (spec.runtime.concurrency as { limit?: number } | undefined)?.limit ?? 3;
  const measured = (name: string) =>
    options.estimates?.agents[name] ?? options.estimates?.agents[name.split('@')[0]!];
  const jobs = schedule.jobs.map((job): PlanJob => {
    const agent = agents.get(job.agent)!;
    const m = measured(job.agent);
    const tier = agent.tier ?? tiers[tiers.length - 1] ?? 'ops';
    const rank = tiers.indexOf(tier);
    const plain = job.noAgent === true || agent.noAgent === true;
    return {
      name: job.name,
      cron: job.cron,
      ...(plain ? { noAgent: true } : { chain: job.chain ?? agent.chain! }),
      calls: m ? m.callsPerTurn : agent.tools?.length ? 2 : 1,
      tokensPerCall: m ? m.tokensPerCall : tokensPerCall(spec, agent, job.prompt ?? job.name),
      ...(job.flex !== undefined ? { flex: job.flex } : {}),
      operational: !analysis.includes(tier),
      needsLlm: job.needsLlm !== false,
      priority: rank >= 0 ? rank : tiers.length,
    };
  });
  return {
    source,
    from,
    to,
    timezone: schedule.timezone,
    endpoints: spec.runtime.endpoints.map((e) => ({
      id: e.id,
      model: e.model,
      ...(e.limits?.rpm !== undefined ? { rpm: e.limits.rpm } : {}),
      ...(e.limits?.tpm !== undefined ? { tpm: e.limits.tpm } : {}),
    })),
    chains: spec.runtime.chains as Record<string, readonly string[]>,
    jobs,
    concurrency,
    callSeconds: options.estimates?.callSeconds ?? callSeconds,
    ...(sonnet !== null && sonnet !== undefined
      ? { budgets: [{ name: 'sonnet calls per hour', match: 'sonnet', limit: sonnet }] }
      : {}),
  };
}
