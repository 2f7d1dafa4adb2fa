import type { CronJob, ScenarioAgent, ScenarioSpec } from './scenario-types.ts';

/**
 * A scheduled job's own `noAgent: true` or `chain:` (what `breakwater plan --write` proposes) runs that
 * job, and only it, as plain code or on another chain. The runtime knows chains and plain code per agent,
 * so each override becomes an agent of its own: the job's agent with the other chain
 * (`codex@light`: same role, tier, memory and tools), or a plain-code agent for the job
 * (`plain:telegram-outbox-flusher`, the tier of the job's agent); the job then names that agent.
 */

/**
 * The agent name a job override runs under.
 *
 * @example
 * ```ts
 * overrideAgentName({ name: 'flusher', cron: '*\/2 * * * *', agent: 'orchestrator', noAgent: true }); // 'plain:flusher'
 * overrideAgentName({ name: 'kpi', cron: '0 * * * *', agent: 'codex', chain: 'light' }); // 'codex@light'
 * ```
 */
export function overrideAgentName(job: CronJob): string | undefined {
  if (job.noAgent) return `plain:${job.name}`;
  if (job.chain !== undefined) return `${job.agent}@${job.chain}`;
  return undefined;
}

/**
 * The scenario with every job override turned into an agent (see the module note). A job whose agent
 * already is what the override asks for is left alone, so applying it twice changes nothing.
 * `loadScenario`/`parseScenario` apply it; call it on a scenario built in code.
 *
 * @example
 * ```ts
 * const spec = applyJobOverrides(myScenario);
 * spec.agents.some((a) => a.name === 'codex@light'); // true when a job of codex says chain: light
 * ```
 */
export function applyJobOverrides(spec: ScenarioSpec): ScenarioSpec {
  const schedule = spec.schedule;
  if (!schedule) return spec;
  const agents = new Map<string, ScenarioAgent>(spec.agents.map((a) => [a.name, a]));
  const added: ScenarioAgent[] = [];
  let changed = false;
  const jobs = schedule.jobs.map((job): CronJob => {
    const agent = agents.get(job.agent);
    if (!agent) return job;
    if (job.noAgent ? agent.noAgent : job.chain === undefined || agent.chain === job.chain) return job;
    const name = overrideAgentName(job)!;
    if (!agents.has(name)) {
      const variant: ScenarioAgent = job.noAgent
        ? { name, noAgent: true, ...(agent.tier !== undefined ? { tier: agent.tier } : {}) }
        : { ...agent, name, chain: job.chain! };
      agents.set(name, variant);
      added.push(variant);
    }
    changed = true;
    return { ...job, agent: name };
  });
  if (!changed) return spec;
  return { ...spec, agents: [...spec.agents, ...added], schedule: { ...schedule, jobs } };
}
