import { describe, expect, it } from 'vitest';
import { planRounds } from '../../src/scenarios/round-planner.ts';
import { parseScenario } from '../../src/scenarios/load-scenario.ts';
import { applyJobOverrides } from '../../src/scenarios/job-overrides.ts';

const yaml = (jobs: string) => `name: x
start: 2026-08-17T07:00:00+09:00
runtime:
  endpoints:
    - { id: p, provider: openai, model: gpt-5.5, apiKey: sk-1 }
    - { id: l, provider: openai, model: gpt-4o-mini, apiKey: sk-1 }
  chains: { premium: [p], light: [l] }
  tiers: [analysis, ops]
agents:
  - { name: codex, role: You are codex., tier: ops, chain: premium, memory: { owns: kpi } }
  - { name: flusher, tier: ops, noAgent: true }
schedule:
  from: 2026-08-17T07:00:00+09:00
  to: 2026-08-17T07:10:00+09:00
  timezone: Asia/Seoul
  jobs:
${jobs}`;

describe('a job’s own noAgent and chain', () => {
  it('run that job alone as plain code or on the other chain, under an agent of its own', () => {
    const spec = parseScenario(
      yaml(`    - { name: kpi, cron: "0 7 * * *", agent: codex, chain: light }
    - { name: heartbeat, cron: "5 7 * * *", agent: codex, noAgent: true }
    - { name: report, cron: "6 7 * * *", agent: codex }`),
      'x.yaml',
    );
    const byName = Object.fromEntries(spec.agents.map((a) => [a.name, a]));
    expect(byName['codex@light']).toEqual({
      name: 'codex@light',
      role: 'You are codex.',
      tier: 'ops',
      chain: 'light',
      memory: { owns: 'kpi' },
    });
    expect(byName['plain:heartbeat']).toEqual({ name: 'plain:heartbeat', noAgent: true, tier: 'ops' });
    const turns = planRounds(spec).flatMap((r) => r.turns.map((t) => [t.itemId, t.agent]));
    expect(turns).toEqual([
      ['kpi@07:00', 'codex@light'],
      ['heartbeat@07:05', 'plain:heartbeat'],
      ['report@07:06', 'codex'],
    ]);
    // Applying it again changes nothing.
    expect(applyJobOverrides(spec)).toBe(spec);
  });

  it('a chain on a plain-code agent, or with noAgent, is refused with the field and what to do', () => {
    expect(() =>
      parseScenario(yaml(`    - { name: f, cron: "0 7 * * *", agent: flusher, chain: light }`), 'x.yaml'),
    ).toThrow(
      /x\.yaml:\d+ at schedule\.jobs\[0\]\.chain: agent "flusher" is plain code \(noAgent\) and uses no chain/,
    );
    expect(() =>
      parseScenario(yaml(`    - { name: f, cron: "0 7 * * *", agent: codex, chain: gold }`), 'x.yaml'),
    ).toThrow(
      /at schedule\.jobs\[0\]\.chain: names chain "gold", which is not defined under runtime\.chains/,
    );
    expect(() =>
      parseScenario(
        yaml(`    - { name: f, cron: "0 7 * * *", agent: codex, chain: light, noAgent: true }`),
        'x.yaml',
      ),
    ).toThrow(/a noAgent job runs plain code and uses no chain; remove one of them/);
  });
});
