import { Cron } from 'croner';
import { z } from 'zod';
import { boundedArray, boundedNumber, LIMITS, nonNegativeMs } from '../config/bounds.ts';
import { emulatorProfileSchema } from '../emulator/emulator-profile.ts';
import { EMULATOR_FLAVORS, type EmulatorFlavor } from '../emulator/emulator-types.ts';
import { endpointConfigSchema } from '../engines/endpoint-config.ts';
import { endpointFaultRuleSchema } from '../fault-proxy/endpoint-fault-rule.ts';
import { byokConfigSchema, byokTemplateSchema, runtimeConfigSchema } from '../runtime/runtime-config.ts';
import { wireNameProblem } from './scenario-text.ts';

const name = z.string().min(1);
/** A name that is part of every call's idempotency key, so of its request headers (scenario-text.ts). */
const wireName = name.superRefine((value, ctx) => {
  const problem = wireNameProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/**
 * An endpoint of a scenario: an {@link endpointConfigSchema} plus `emulator: <flavor>`.
 *
 * @example
 * ```ts
 * scenarioEndpointSchema.parse({ id: 'p', provider: 'openai', model: 'gpt-4o', emulator: 'openai', apiKey: 'sk-emu-1' });
 * ```
 */
export const scenarioEndpointSchema = endpointConfigSchema.safeExtend({
  /** Served by the in-process emulator's listener of this flavor; `baseURL` is filled in at run time. */
  emulator: z.enum(EMULATOR_FLAVORS as [EmulatorFlavor, ...EmulatorFlavor[]]).optional(),
});

/**
 * `runtime.byok:` of a scenario: the runtime's BYOK config, its templates allowed to name an emulator
 * flavor (`emulator: openai`) instead of a `baseURL`, so `/byok` during a run checks and uses keys there.
 *
 * @example
 * ```ts
 * scenarioByokSchema.parse({ templates: { openai: { provider: 'openai', model: 'gpt-4o-mini', emulator: 'openai' } } });
 * ```
 */
export const scenarioByokSchema = byokConfigSchema.safeExtend({
  templates: z.record(
    z.string(),
    byokTemplateSchema.safeExtend({
      /** Checked and called on the emulator's listener of this flavor; `baseURL` is filled in at run time. */
      emulator: z.enum(EMULATOR_FLAVORS as [EmulatorFlavor, ...EmulatorFlavor[]]).optional(),
    }),
  ),
});

/**
 * What a scenario's `runtime.byok:` may hold (templates with `emulator:`).
 *
 * @example
 * ```ts
 * const byok: ScenarioByokInput = { templates: { openai: { provider: 'openai', model: 'gpt-4o-mini', emulator: 'openai' } } };
 * ```
 */
export type ScenarioByokInput = z.input<typeof scenarioByokSchema>;

/**
 * `runtime:` of a scenario: the runtime config, its endpoints (and BYOK templates) allowed to name an
 * emulator flavor.
 *
 * @example
 * ```ts
 * scenarioRuntimeSchema.parse({ endpoints: [endpoint], chains: { premium: ['p'] } }).concurrency.limit; // 3
 * ```
 */
export const scenarioRuntimeSchema = runtimeConfigSchema.safeExtend({
  endpoints: z.array(scenarioEndpointSchema).min(1),
  byok: scenarioByokSchema.optional(),
});

const agentSchema = z.strictObject({
  name: wireName,
  role: z.string().optional(),
  tier: name.optional(),
  chain: name.optional(),
  memory: z.record(z.string(), z.string()).optional(),
  tools: z.array(name).optional(),
  noAgent: z.boolean().optional(),
  maxWaitMs: nonNegativeMs().optional(),
  maxTokens: boundedNumber({ int: true, gt: 0, max: LIMITS.maxTokens, what: 'tokens' }).optional(),
});

const agendaItemSchema = z.strictObject({
  id: wireName,
  title: name,
  detail: z.string().optional(),
  kind: name.optional(),
});

const roundsSchema = z.strictObject({
  count: boundedNumber({ int: true, gt: 0, max: LIMITS.rounds, what: 'rounds' }),
  items: boundedArray(agendaItemSchema, LIMITS.items, 'items').min(1),
  seePreviousRound: z.boolean().optional(),
  agents: boundedArray(name, LIMITS.agents, 'agents').min(1).optional(),
});

/** At most this long, so the default run id (name + stamp) stays within a run id's 200 characters. */
export const MAX_SCENARIO_NAME_LENGTH = 160;

export const cronJobSchema = z.strictObject({
  // A job's name is its turns' item id (`<job>@HH:MM`), which travels in every call's idempotency key.
  name: wireName,
  cron: name,
  agent: name,
  prompt: z.string().min(1).optional(),
  // Read by `breakwater plan` (src/planner/): how far the job may move, and whether it needs an LLM.
  flex: z.union([z.string(), z.number()]).optional(),
  needsLlm: z.boolean().optional(),
  // Applied when the scenario is loaded (job-overrides.ts): plain code, or another chain, for this job alone.
  noAgent: z.boolean().optional(),
  chain: name.optional(),
});

const scheduleSchema = z.strictObject({
  from: name,
  to: name,
  timezone: name,
  sliceMinutes: boundedNumber({ gt: 0, max: 1_440, what: 'minutes (one day)' }).optional(),
  jobs: boundedArray(cronJobSchema, LIMITS.jobs, 'jobs').min(1),
});

/** The provider an endpoint must declare to be served by each emulator flavor. */
export const FLAVOR_WIRE: Readonly<Record<EmulatorFlavor, { provider: string; flavor?: string }>> = {
  anthropic: { provider: 'anthropic' },
  openai: { provider: 'openai' },
  gemini: { provider: 'gemini' },
  'gemini-compat': { provider: 'openai-compatible', flavor: 'gemini-compat' },
  vllm: { provider: 'openai-compatible', flavor: 'vllm' },
  ollama: { provider: 'openai-compatible', flavor: 'ollama' },
};

/**
 * Parses a cron expression the way the planner expands it (croner, 5 or 6 fields, in `timezone`);
 * returns croner's complaint, or `undefined` when it parses.
 *
 * @example
 * ```ts
 * cronProblem('0,30 7-9 * * 1-5'); // undefined
 * cronProblem('0 25 * * *'); // 'Invalid value for hour: 25'
 * ```
 */
export function cronProblem(expression: string, timezone?: string): string | undefined {
  try {
    new Cron(expression, { mode: '5-or-6-parts', ...(timezone ? { timezone } : {}) });
    return undefined;
  } catch (e) {
    return (e instanceof Error ? e.message : String(e)).replace(/^CronPattern: /, '');
  }
}

const reportSchema = z.strictObject({
  peak: z.strictObject({ from: name, to: name }).optional(),
  timezone: name.optional(),
  analysisTiers: z.array(name).min(1).optional(),
  thresholds: z
    .strictObject({
      maxInFlight: z.number().min(0).nullable().optional(),
      sonnetPerHour: z.number().min(0).nullable().optional(),
      coolingDownMessages: z.number().min(0).nullable().optional(),
      failureRate: z.number().min(0).max(1).nullable().optional(),
      analysisSuccessRate: z.number().min(0).max(1).nullable().optional(),
      placeholders: z.number().min(0).nullable().optional(),
    })
    .optional(),
});

export const baseScenarioSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'must be letters, digits, ".", "_" or "-" (it names the run)')
    // The default run id is the name plus a 21-character stamp, and a run id travels in every call's headers.
    .max(
      MAX_SCENARIO_NAME_LENGTH,
      `is too long: at most ${MAX_SCENARIO_NAME_LENGTH} characters (it names the run)`,
    ),
  description: z.string().optional(),
  start: name.optional(),
  timeScale: boundedNumber({
    gt: 0,
    min: LIMITS.timeScaleMin,
    max: LIMITS.timeScaleMax,
    what: 'simulated ms per real ms',
  }).optional(),
  runtime: scenarioRuntimeSchema,
  agents: boundedArray(agentSchema, LIMITS.agents, 'agents').min(1),
  rounds: roundsSchema.optional(),
  schedule: scheduleSchema.optional(),
  emulator: emulatorProfileSchema.optional(),
  report: reportSchema.optional(),
  faults: z.array(endpointFaultRuleSchema).optional(),
});

/** A scenario as its fields parse, before the checks across fields (scenario-checks.ts). */
export type BaseScenario = z.output<typeof baseScenarioSchema>;
