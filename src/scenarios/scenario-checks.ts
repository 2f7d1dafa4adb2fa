import type { z } from 'zod';
import { LIMITS } from '../config/bounds.ts';
import { parseFlex } from './flex-window.ts';
import { SCENARIO_TOOL_NAMES, scenarioTool } from './scenario-tools.ts';
import { isAbsoluteInstant, isTimeOfDay, isTimeZone, resolveInstant } from '../clock/zoned-time.ts';
import { type cronJobSchema, FLAVOR_WIRE, cronProblem, type BaseScenario } from './scenario-base-schema.ts';

/*
 * The checks of a scenario across its fields (an agent naming a chain, a job's override naming an endpoint, the
 * size of the whole), each adding an issue at the path of the field to fix, with what to write instead.
 */

type Spec = BaseScenario;
type Ctx = z.RefinementCtx;

const issue = (ctx: Ctx, path: (string | number)[], message: string) =>
  ctx.addIssue({ code: 'custom', path, message });

const list = (names: Iterable<string>) => [...names].join(', ') || 'none';

function checkAgents(s: Spec, ctx: Ctx): void {
  const chains = Object.keys(s.runtime.chains);
  const seen = new Map<string, number>();
  s.agents.forEach((a, i) => {
    const first = seen.get(a.name);
    if (first !== undefined)
      issue(
        ctx,
        ['agents', i, 'name'],
        `"${a.name}" is already agents[${first}]; agent names must be unique`,
      );
    else seen.set(a.name, i);
    if (a.tier !== undefined && !s.runtime.tiers.includes(a.tier))
      issue(
        ctx,
        ['agents', i, 'tier'],
        `names tier "${a.tier}", which is not defined under runtime.tiers (defined: ${list(s.runtime.tiers)})`,
      );
    if (a.chain !== undefined && !chains.includes(a.chain))
      issue(
        ctx,
        ['agents', i, 'chain'],
        `names chain "${a.chain}", which is not defined under runtime.chains (defined: ${list(chains)})`,
      );
    if (a.chain === undefined && !a.noAgent)
      issue(
        ctx,
        ['agents', i],
        `agent "${a.name}" needs a chain (one of ${list(chains)}), or noAgent: true for plain-code work`,
      );
    if (a.noAgent && a.tools?.length)
      issue(ctx, ['agents', i, 'tools'], 'a noAgent agent runs plain code and calls no tools; remove tools');
    a.tools?.forEach((t, j) => {
      if (!scenarioTool(t))
        issue(
          ctx,
          ['agents', i, 'tools', j],
          `names tool "${t}", which is not a built-in scenario tool; use one of ${list(SCENARIO_TOOL_NAMES)}`,
        );
    });
  });
}

function checkEmulator(s: Spec, ctx: Ctx): void {
  const profile = s.emulator;
  if (profile?.timeScale !== undefined)
    issue(
      ctx,
      ['emulator', 'timeScale'],
      "the emulator runs on the scenario's clock; set the scenario's top-level timeScale instead",
    );
  const keys = profile?.keys ?? [];
  const known = new Set(keys.flatMap((k) => [k.alias, k.key]));
  const strictKeys = keys.length > 0 && profile?.acceptAnyKey !== true;
  s.runtime.endpoints.forEach((e, i) => {
    if (e.emulator === undefined) return;
    if (!profile) {
      issue(
        ctx,
        ['runtime', 'endpoints', i, 'emulator'],
        `endpoint "${e.id}" is served by the emulator, but the scenario has no emulator: profile; add one (emulator: {} will do) or give the endpoint a real baseURL`,
      );
      return;
    }
    const wire = FLAVOR_WIRE[e.emulator];
    if (e.provider !== wire.provider || (wire.flavor !== undefined && e.flavor !== wire.flavor)) {
      const want = wire.flavor
        ? `provider: ${wire.provider} with flavor: ${wire.flavor}`
        : `provider: ${wire.provider}`;
      issue(
        ctx,
        ['runtime', 'endpoints', i, 'emulator'],
        `the ${e.emulator} listener speaks ${want}; make the endpoint match or pick another flavor`,
      );
    }
    if (e.baseURL !== undefined)
      issue(
        ctx,
        ['runtime', 'endpoints', i, 'baseURL'],
        'is filled in from the emulator for an emulator: endpoint; remove it',
      );
    if (strictKeys && e.apiKey !== undefined && !known.has(e.apiKey))
      issue(
        ctx,
        ['runtime', 'endpoints', i, 'apiKey'],
        `names no key of the emulator profile (aliases: ${list(keys.map((k) => k.alias))}); use an alias or set emulator.acceptAnyKey: true`,
      );
  });
  checkByokTemplates(s, ctx);
  profile?.faults?.forEach((f, i) => {
    const key = f.match?.key;
    if (key !== undefined && keys.length > 0 && !known.has(key) && !/^[0-9a-f]{8}$/.test(key))
      issue(
        ctx,
        ['emulator', 'faults', i, 'match', 'key'],
        `names no key of the emulator profile (aliases: ${list(keys.map((k) => k.alias))}); the rule would never fire`,
      );
  });
}

/** Top-level `faults:` name endpoints that exist. */
function checkEndpointFaults(s: Spec, ctx: Ctx): void {
  const ids = s.runtime.endpoints.map((e) => e.id);
  s.faults?.forEach((f, i) => {
    if (!ids.includes(f.endpoint))
      issue(
        ctx,
        ['faults', i, 'endpoint'],
        `names endpoint "${f.endpoint}", which is not defined under runtime.endpoints (defined: ${list(ids)})`,
      );
  });
}

/** `emulator:` BYOK templates: a profile exists, the listener speaks the template's wire, no baseURL. */
function checkByokTemplates(s: Spec, ctx: Ctx): void {
  for (const [name, t] of Object.entries(s.runtime.byok?.templates ?? {})) {
    if (t.emulator === undefined) continue;
    const at = ['runtime', 'byok', 'templates', name];
    if (!s.emulator) {
      issue(
        ctx,
        [...at, 'emulator'],
        'names an emulator flavor, but the scenario has no emulator: profile; add one or give a real baseURL',
      );
      continue;
    }
    const wire = FLAVOR_WIRE[t.emulator];
    if (t.provider !== wire.provider || (wire.flavor !== undefined && t.flavor !== wire.flavor))
      issue(
        ctx,
        [...at, 'emulator'],
        `the ${t.emulator} listener speaks provider: ${wire.provider}${wire.flavor ? ` with flavor: ${wire.flavor}` : ''}; make the template match or pick another flavor`,
      );
    if (t.baseURL !== undefined)
      issue(ctx, [...at, 'baseURL'], 'is filled in from the emulator for an emulator: template; remove it');
  }
}

function checkRounds(s: Spec, ctx: Ctx): void {
  const r = s.rounds;
  if (!r) return;
  const ids = new Map<string, number>();
  r.items.forEach((item, i) => {
    const first = ids.get(item.id);
    if (first !== undefined)
      issue(
        ctx,
        ['rounds', 'items', i, 'id'],
        `"${item.id}" is already rounds.items[${first}].id; item ids must be unique`,
      );
    else ids.set(item.id, i);
  });
  const byName = new Map(s.agents.map((a) => [a.name, a]));
  r.agents?.forEach((n, i) => {
    const a = byName.get(n);
    if (!a)
      issue(
        ctx,
        ['rounds', 'agents', i],
        `names agent "${n}", which is not defined under agents (defined: ${list(byName.keys())})`,
      );
    else if (a.noAgent)
      issue(
        ctx,
        ['rounds', 'agents', i],
        `"${n}" is plain-code (noAgent) work; round work is answered by LLM agents`,
      );
  });
  if (!r.agents && s.agents.every((a) => a.noAgent))
    issue(ctx, ['rounds'], 'round work needs at least one LLM agent (every agent is noAgent)');
}

function checkSchedule(s: Spec, ctx: Ctx): void {
  const sch = s.schedule;
  if (!sch) return;
  const tzOk = isTimeZone(sch.timezone);
  if (!tzOk)
    issue(
      ctx,
      ['schedule', 'timezone'],
      `"${sch.timezone}" is not an IANA time zone; write e.g. Asia/Seoul or UTC`,
    );
  for (const bound of ['from', 'to'] as const) {
    const v = sch[bound];
    if (!isAbsoluteInstant(v) && !isTimeOfDay(v))
      issue(
        ctx,
        ['schedule', bound],
        `"${v}" is neither an ISO 8601 date-time with offset (2026-08-17T06:00:00+09:00) nor a time of day (06:00)`,
      );
  }
  if (isAbsoluteInstant(sch.from) && isAbsoluteInstant(sch.to) && tzOk) {
    const from = resolveInstant(sch.from, sch.timezone, 0);
    const to = resolveInstant(sch.to, sch.timezone, 0);
    if (to <= from) issue(ctx, ['schedule', 'to'], `must be after schedule.from (${sch.from})`);
  }
  const byName = new Map(s.agents.map((a) => [a.name, a]));
  const jobs = new Map<string, number>();
  sch.jobs.forEach((job, i) => {
    const first = jobs.get(job.name);
    if (first !== undefined)
      issue(
        ctx,
        ['schedule', 'jobs', i, 'name'],
        `"${job.name}" is already schedule.jobs[${first}].name; job names must be unique`,
      );
    else jobs.set(job.name, i);
    if (!byName.has(job.agent))
      issue(
        ctx,
        ['schedule', 'jobs', i, 'agent'],
        `names agent "${job.agent}", which is not defined under agents (defined: ${list(byName.keys())})`,
      );
    checkJobOverrides(s, job, i, ctx);
    const problem = cronProblem(job.cron, tzOk ? sch.timezone : undefined);
    if (problem)
      issue(
        ctx,
        ['schedule', 'jobs', i, 'cron'],
        `"${job.cron}" does not parse: ${problem}; write 5 fields (min hour day month weekday) or 6 (with seconds first)`,
      );
  });
}

/** A job's `flex`, `chain` and `noAgent` make sense. */
function checkJobOverrides(s: Spec, job: z.output<typeof cronJobSchema>, i: number, ctx: Ctx): void {
  const flex = parseFlex(job.flex);
  if (typeof flex === 'string') issue(ctx, ['schedule', 'jobs', i, 'flex'], flex);
  if (job.chain === undefined) return;
  if (job.noAgent)
    issue(
      ctx,
      ['schedule', 'jobs', i, 'chain'],
      'a noAgent job runs plain code and uses no chain; remove one of them',
    );
  else if (s.agents.find((a) => a.name === job.agent)?.noAgent)
    issue(
      ctx,
      ['schedule', 'jobs', i, 'chain'],
      `agent "${job.agent}" is plain code (noAgent) and uses no chain; point the job at an LLM agent or remove chain`,
    );
  const chains = Object.keys(s.runtime.chains);
  if (!chains.includes(job.chain))
    issue(
      ctx,
      ['schedule', 'jobs', i, 'chain'],
      `names chain "${job.chain}", which is not defined under runtime.chains (defined: ${list(chains)})`,
    );
}

/** Every turn is planned before the first one runs: the plan must fit in memory, and a round in one commit. */
function checkSize(s: Spec, ctx: Ctx): void {
  const r = s.rounds;
  if (r) {
    const perRound = r.items.length * (r.agents?.length ?? s.agents.filter((a) => !a.noAgent).length);
    if (perRound > LIMITS.turnsPerRound)
      issue(
        ctx,
        ['rounds', 'items'],
        `makes ${perRound.toLocaleString('en-US')} turns per round (items × agents); at most ${LIMITS.turnsPerRound.toLocaleString('en-US')} are allowed in one round`,
      );
    else if (perRound * r.count > LIMITS.turns)
      issue(
        ctx,
        ['rounds', 'count'],
        `makes ${(perRound * r.count).toLocaleString('en-US')} turns in all (count × items × agents); at most ${LIMITS.turns.toLocaleString('en-US')} are allowed in a run`,
      );
  }
  // A schedule's firings are bounded where they are expanded (round-planner's MAX_FIRINGS).
}

/**
 * Every check across fields of a parsed scenario; issues are added to `ctx` (zod's refinement context).
 *
 * @example
 * ```ts
 * const scenarioSchema = baseScenarioSchema.superRefine(checkScenario);
 * ```
 */
export function checkScenario(s: Spec, ctx: Ctx): void {
  if (s.rounds && s.schedule)
    issue(ctx, ['schedule'], 'a scenario has either rounds: or schedule:, not both; remove one');
  if (!s.rounds && !s.schedule)
    issue(
      ctx,
      [],
      'needs its work: rounds: (agents answer agenda items round after round) or schedule: (cron jobs over a window)',
    );
  if (s.start !== undefined && !isAbsoluteInstant(s.start))
    issue(
      ctx,
      ['start'],
      `"${s.start}" is not an ISO 8601 date-time with offset; write e.g. 2026-08-17T06:00:00+09:00`,
    );
  checkAgents(s, ctx);
  checkEmulator(s, ctx);
  checkEndpointFaults(s, ctx);
  checkRounds(s, ctx);
  checkSchedule(s, ctx);
  checkSize(s, ctx);
}
