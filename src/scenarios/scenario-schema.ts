import { baseScenarioSchema } from './scenario-base-schema.ts';
import { checkScenario } from './scenario-checks.ts';

/**
 * The zod schema of a {@link ScenarioSpec}. Unknown fields are refused at every level (a typo must
 * not fall back to a default). Once the shape is right, the cross-checks run: agents' chains and tiers
 * exist, chains name defined endpoints, `emulator:` endpoints have an emulator profile and match its
 * flavor, jobs name existing agents, cron expressions parse (croner), exactly one of rounds/schedule,
 * names (agents, items, jobs) unique, tools are built-in ones.
 *
 * @example
 * ```ts
 * const parsed = scenarioSchema.safeParse(yaml.parse(text));
 * if (!parsed.success) console.log(parsed.error.issues[0]?.path);
 * ```
 */
export const scenarioSchema = baseScenarioSchema.superRefine(checkScenario);
