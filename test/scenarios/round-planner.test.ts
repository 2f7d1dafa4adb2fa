import { describe, expect, it } from 'vitest';
import { loadScenario, parseScenario } from '../../src/scenarios/load-scenario.ts';
import { expandSchedule, planRounds } from '../../src/scenarios/round-planner.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { formatClock, zonedParts, zonedTimeToEpoch } from '../../src/clock/zoned-time.ts';

const kst = (hhmm: string, day = '2026-08-17') => Date.parse(`${day}T${hhmm}:00+09:00`);
const firingsOf = (spec: ScenarioSpec, job: string) =>
  planRounds(spec)
    .flatMap((r) => r.turns)
    .filter((t) => t.itemId.startsWith(`${job}@`))
    .map((t) => t.at!);

describe('round work (agent8-storm)', () => {
  const spec = loadScenario('agent8-storm');
  const plan = planRounds(spec, { origin: 0 });

  it('3 rounds × 35 items × 8 agents, each (item, agent) once per round, items in order then agents in order', () => {
    expect(plan.map((r) => r.round)).toEqual([1, 2, 3]);
    const agents = spec.agents.map((a) => a.name);
    const items = spec.rounds!.items.map((i) => i.id);
    for (const round of plan) {
      expect(round.turns).toHaveLength(35 * 8);
      expect(round.turns.map((t) => `${t.itemId}/${t.agent}`)).toEqual(
        items.flatMap((i) => agents.map((a) => `${i}/${a}`)),
      );
      expect(round.turns.every((t) => t.at === undefined && t.item?.id === t.itemId)).toBe(true);
    }
  });

  it('only the agents listed under rounds.agents take part', () => {
    const text = `name: two
runtime:
  endpoints: [{ id: e, provider: openai, model: m, apiKeyEnv: K }]
  chains: { c: [e] }
agents:
  - { name: A, chain: c }
  - { name: B, chain: c }
  - { name: C, chain: c }
rounds: { count: 2, agents: [C, A], items: [{ id: i1, title: one }, { id: i2, title: two }] }
`;
    const turns = planRounds(parseScenario(text, 'inline'))[1]!.turns;
    expect(turns.map((t) => `${t.itemId}/${t.agent}`)).toEqual(['i1/C', 'i1/A', 'i2/C', 'i2/A']);
  });
});

describe('scheduled work (morning-peak, Monday 2026-08-17, Asia/Seoul)', () => {
  const spec = loadScenario('morning-peak');
  const plan = planRounds(spec);
  const all = plan.flatMap((r) => r.turns);

  it('telegram-outbox-flusher fires every 2 minutes: 30 times between 07:00 and 08:00, 75 in 06:00–08:30', () => {
    const at = firingsOf(spec, 'telegram-outbox-flusher');
    expect(at).toHaveLength(75);
    expect(at.filter((t) => t >= kst('07:00') && t < kst('08:00'))).toHaveLength(30);
    expect(at.slice(0, 3)).toEqual([kst('06:00'), kst('06:02'), kst('06:04')]);
    expect(all.filter((t) => t.agent === 'telegram-outbox-flusher')).toHaveLength(75);
  });

  it('research-broker-retry-0600 fires every 5 minutes from 06:00 (12 an hour), the last at 08:25', () => {
    const at = firingsOf(spec, 'research-broker-retry-0600');
    expect(at).toHaveLength(30);
    expect(at[0]).toBe(kst('06:00'));
    expect(at.at(-1)).toBe(kst('08:25'));
    expect(at.filter((t) => t >= kst('06:00') && t < kst('07:00'))).toHaveLength(12);
  });

  it('fi-earnings-refresh fires at :00 and :30 from 07:00 on this Monday, and not on a Saturday', () => {
    expect(firingsOf(spec, 'fi-earnings-refresh')).toEqual([kst('07:00'), kst('07:30'), kst('08:00')]);
    const saturday = expandSchedule(
      {
        ...spec.schedule!,
        from: '2026-08-22T06:00:00+09:00',
        to: '2026-08-22T08:30:00+09:00',
      },
      0,
    );
    expect(saturday.filter((f) => f.job === 'fi-earnings-refresh')).toEqual([]);
    expect(saturday.filter((f) => f.job === 'telegram-outbox-flusher')).toHaveLength(75);
  });

  it('15+ distinct jobs fire between 07:00 and 08:00 KST, the seed-named ones among them', () => {
    const peak = expandSchedule(spec.schedule!, 0).filter((f) => f.at >= kst('07:00') && f.at < kst('08:00'));
    const jobs = new Set(peak.map((f) => f.job));
    expect(jobs.size).toBeGreaterThanOrEqual(15);
    for (const named of [
      'telegram-outbox-flusher',
      'research-broker-retry-0600',
      'fi-earnings-refresh',
      'market-indicator-tracker',
      'daily-heartbeat',
      'morning-calendar-notify',
      'com.openclaw.cold-alert',
      'overseas-bond-morning-briefing',
      'claude-token-daily-report',
      'research-brief-daily-0730',
      'overseas-bond-desk-todo-alert',
      'com.openclaw.kpi-daily',
      'analyst-channel-collector',
      'hmig-morning-monitor',
    ]) {
      expect(jobs, named).toContain(named);
    }
    expect(firingsOf(spec, 'research-brief-daily-0730')).toEqual([kst('07:30')]);
  });

  it('one turn per firing: itemId job@HH:MM in KST, the job prompt, the job agent, simulated epoch ms', () => {
    const brief = all.find((t) => t.itemId === 'research-brief-daily-0730@07:30')!;
    expect(brief).toEqual({
      itemId: 'research-brief-daily-0730@07:30',
      agent: 'cowork',
      at: kst('07:30'),
      prompt: spec.schedule!.jobs.find((j) => j.name === 'research-brief-daily-0730')!.prompt,
    });
    expect(new Set(all.map((t) => `${t.itemId}/${t.agent}`)).size).toBe(all.length);
  });

  it('rounds are 10-minute slices of 06:00–08:30, each sorted by time and holding only its slice', () => {
    expect(plan).toHaveLength(15);
    plan.forEach((round, i) => {
      const from = kst('06:00') + i * 600_000;
      const times = round.turns.map((t) => t.at!);
      expect(times).toEqual([...times].sort((a, b) => a - b));
      expect(times.every((t) => t >= from && t < from + 600_000)).toBe(true);
    });
    expect(plan[9]!.turns[0]!.itemId).toBe('telegram-outbox-flusher@07:30');
  });
});

describe('schedules written as times of day, seconds, and zones', () => {
  const text = (from: string, to: string, cron: string, tz = 'Asia/Seoul') => `name: tod
runtime:
  endpoints: [{ id: e, provider: openai, model: m, apiKeyEnv: K }]
  chains: { c: [e] }
agents: [{ name: A, chain: c }]
schedule:
  from: "${from}"
  to: "${to}"
  timezone: ${tz}
  sliceMinutes: 30
  jobs: [{ name: j, cron: '${cron}', agent: A }]
`;

  it('HH:MM bounds are read on the origin day in the schedule zone; a 6-field cron keeps its seconds in the id', () => {
    const spec = parseScenario(text('06:00', '06:02', '30 * * * * *'), 'inline');
    const plan = planRounds(spec, { origin: kst('05:00') });
    expect(plan).toHaveLength(1);
    expect(plan[0]!.turns.map((t) => t.itemId)).toEqual(['j@06:00:30', 'j@06:01:30']);
    expect(plan[0]!.turns[0]!.at).toBe(kst('06:00') + 30_000);
  });

  it('a window past midnight ends the next day; a New York schedule fires on New York time', () => {
    const overnight = planRounds(parseScenario(text('23:00', '01:00', '0 * * * *'), 'inline'), {
      origin: kst('12:00'),
    });
    expect(overnight.flatMap((r) => r.turns).map((t) => t.itemId)).toEqual(['j@23:00', 'j@00:00']);
    expect(overnight).toHaveLength(4);
    const ny = planRounds(
      parseScenario(
        text('2026-08-17T09:00:00-04:00', '2026-08-17T10:00:00-04:00', '30 9 * * 1-5', 'America/New_York'),
        'inline',
      ),
    );
    expect(ny.flatMap((r) => r.turns).map((t) => [t.itemId, t.at])).toEqual([
      ['j@09:30', Date.parse('2026-08-17T09:30:00-04:00')],
    ]);
  });

  it('zoned time helpers agree with the offsets', () => {
    expect(zonedParts(Date.parse('2026-08-16T22:30:00Z'), 'Asia/Seoul')).toMatchObject({
      day: 17,
      hour: 7,
      minute: 30,
    });
    expect(formatClock(kst('07:05'), 'Asia/Seoul')).toBe('07:05');
    expect(
      zonedTimeToEpoch({ year: 2026, month: 1, day: 15, hour: 9, minute: 0, second: 0 }, 'America/New_York'),
    ).toBe(Date.parse('2026-01-15T09:00:00-05:00'));
    expect(
      zonedTimeToEpoch({ year: 2026, month: 7, day: 15, hour: 9, minute: 0, second: 0 }, 'America/New_York'),
    ).toBe(Date.parse('2026-07-15T09:00:00-04:00'));
  });
});
