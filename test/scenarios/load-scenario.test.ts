import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, sep } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ConfigError, isConfigError } from '../../src/core/errors/config-error.ts';
import {
  listScenarios,
  loadScenario,
  PACKAGE_ROOT,
  parseScenario,
  resolveScenario,
} from '../../src/scenarios/load-scenario.ts';

const dir = mkdtempSync(join(tmpdir(), 'bw-scenarios-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A small valid scenario; each bad case below changes one thing in it. */
const BASE = `name: tiny
runtime:
  endpoints:
    - id: primary
      provider: openai
      model: gpt-4o
      emulator: openai
      apiKey: sk-emu-primary-0001
    - id: backup
      provider: anthropic
      model: claude-sonnet-4-6
      emulator: anthropic
      apiKey: sk-ant-emu-backup-0002
  chains:
    premium: [primary, backup]
  tiers: [analysis, ops]
agents:
  - name: Kai
    tier: analysis
    chain: premium
    tools: [read_runbook]
  - name: Yuna
    tier: ops
    chain: premium
rounds:
  count: 2
  items:
    - { id: U01, title: Checkout latency }
emulator:
  keys:
    - { alias: primary, key: sk-emu-primary-0001 }
    - { alias: backup, key: sk-ant-emu-backup-0002 }
  faults:
    - { kind: rate_limit, match: { flavor: openai, key: primary }, probability: 0.5 }
`;

const SCHEDULE = `schedule:
  from: 2026-08-17T06:00:00+09:00
  to: 2026-08-17T08:30:00+09:00
  timezone: Asia/Seoul
  jobs:
    - { name: flusher, cron: '*/2 * * * *', agent: Kai }
`;

let n = 0;
function write(text: string, ext = 'yaml'): string {
  const file = join(dir, `case-${++n}.${ext}`);
  writeFileSync(file, text);
  return file;
}

/** The 1-based line of the first line of `text` containing `marker`. */
function lineOf(text: string, marker: string): number {
  const i = text.split('\n').findIndex((l) => l.includes(marker));
  if (i < 0) throw new Error(`marker not found: ${marker}`);
  return i + 1;
}

/**
 * How an error names a file: relative to the cwd when it lies inside it, else absolute. Inside means
 * under the cwd as a folder: a checkout at `<dir>/bw` does not contain `<dir>/bw-scenarios-1/x.yaml`.
 */
function shownAs(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel) ? rel : file;
}

function refusal(text: string, ext = 'yaml'): { error: ConfigError; file: string } {
  const file = write(text, ext);
  try {
    loadScenario(file);
  } catch (e) {
    if (isConfigError(e)) return { error: e, file };
    throw e;
  }
  throw new Error('the scenario was accepted');
}

describe('loadScenario accepts the shipped scenarios', () => {
  it('agent8-storm: 8 agents, 10 urgent + 25 composite items, 3 rounds that see the previous round', () => {
    const spec = loadScenario('agent8-storm');
    expect(spec.agents.map((a) => a.name)).toEqual([
      'Kai',
      'Yuna',
      'Miso',
      'Dani',
      'Juno',
      'Hana',
      'Rex',
      'Andrew',
    ]);
    expect(new Set(spec.agents.map((a) => a.role)).size).toBe(8);
    expect(spec.rounds?.count).toBe(3);
    expect(spec.rounds?.seePreviousRound).toBe(true);
    expect(spec.rounds?.items.filter((i) => i.kind === 'urgent')).toHaveLength(10);
    expect(spec.rounds?.items.filter((i) => i.kind === 'composite')).toHaveLength(25);
    expect(spec.runtime.concurrency).toMatchObject({ limit: 3, adaptive: true });
    const models = spec.runtime.endpoints.map((e) => e.model);
    expect(models).toEqual(
      expect.arrayContaining(['gpt-4o', 'claude-sonnet-4-6', 'gemini-2.5-flash', 'llama-3-70b']),
    );
    expect(spec.runtime.endpoints.find((e) => e.model === 'llama-3-70b')?.flavor).toBe('vllm');
    // Andrew's first call is the one that drops: a count-1 reset on the key only he uses.
    const andrew = spec.agents.find((a) => a.name === 'Andrew')!;
    const andrewPrimary = spec.runtime.endpoints.find(
      (e) => e.id === spec.runtime.chains[andrew.chain!]![0],
    )!;
    const others = spec.agents
      .filter((a) => a.name !== 'Andrew')
      .map((a) => spec.runtime.chains[a.chain!]![0]);
    expect(others).not.toContain(andrewPrimary.id);
    const reset = spec.emulator?.faults?.find((f) => f.kind === 'connection_reset');
    const andrewKey = spec.emulator?.keys?.find((k) => k.key === andrewPrimary.apiKey);
    expect(reset).toMatchObject({ count: 1, match: { key: andrewKey?.alias } });
    // The shared primary pool has a credit balance to run out of.
    expect(spec.emulator?.keys?.find((k) => k.alias === 'primary')?.credit).toBeGreaterThan(0);
  });

  it('morning-peak: 71 jobs, six LLM agents on premium/light plus the no-LLM flusher', () => {
    const spec = loadScenario('morning-peak');
    expect(spec.schedule?.jobs).toHaveLength(71);
    const llm = spec.agents.filter((a) => !a.noAgent);
    expect(llm.map((a) => a.name)).toEqual([
      'codex',
      'orchestrator',
      'analyst-fundamental',
      'analyst-macro',
      'analyst-technical',
      'cowork',
    ]);
    for (const a of llm) {
      const analysis = a.name.startsWith('analyst-') || a.name === 'cowork';
      expect([a.name, a.tier, a.chain]).toEqual([
        a.name,
        analysis ? 'analysis' : 'ops',
        analysis ? 'premium' : 'light',
      ]);
    }
    expect(spec.agents.find((a) => a.name === 'telegram-outbox-flusher')?.noAgent).toBe(true);
    const premium = spec.runtime.chains.premium!.map(
      (id) => spec.runtime.endpoints.find((e) => e.id === id)!.model,
    );
    expect(premium).toEqual(['gpt-5.5', 'claude-sonnet-4-6']);
    expect(spec.runtime.concurrency?.limit).toBe(3);
    const sonnetQuota = spec.emulator?.keys
      ?.flatMap((k) => Object.entries(k.quotas?.models ?? {}))
      .find(([m]) => m === 'claude-sonnet-4-6')?.[1];
    expect(sonnetQuota?.rpm).toBeGreaterThan(0);
    expect(sonnetQuota?.itpm).toBeGreaterThan(0);
  });

  it('lists and resolves shipped scenarios by name from any working directory', () => {
    expect(listScenarios()).toEqual(expect.arrayContaining(['agent8-storm', 'morning-peak']));
    const cwd = process.cwd();
    try {
      process.chdir(dir);
      expect(resolveScenario('morning-peak')).toBe(
        join(PACKAGE_ROOT, 'scenarios', 'morning-peak', 'scenario.yaml'),
      );
      expect(loadScenario('agent8-storm').name).toBe('agent8-storm');
    } finally {
      process.chdir(cwd);
    }
  });

  it('reads a folder, a YAML file and a JSON file alike, and freezes the result', () => {
    const folder = join(dir, 'my-scenario');
    const file = write(BASE);
    expect(loadScenario(file).name).toBe('tiny');
    const json = write(JSON.stringify(parseScenario(BASE, 'inline')), 'json');
    const spec = loadScenario(json);
    expect(spec.agents[0]?.tools).toEqual(['read_runbook']);
    expect(Object.isFrozen(spec.agents[0])).toBe(true);
    rmSync(folder, { recursive: true, force: true });
    expect(() => resolveScenario(folder)).toThrow(/shipped scenario; give a path, or one of: .*agent8-storm/);
  });
});

describe('a bad scenario is refused with file:line, the field and what to do', () => {
  const cases: { name: string; text: string; marker: string; path: string; message: RegExp }[] = [
    {
      name: 'an agent names an undefined chain',
      text: BASE.replace('    tier: ops\n    chain: premium', '    tier: ops\n    chain: gold'),
      marker: 'chain: gold',
      path: 'agents[1].chain',
      message: /names chain "gold", which is not defined under runtime.chains \(defined: premium\)/,
    },
    {
      name: 'an agent names an undefined tier',
      text: BASE.replace('    tier: ops', '    tier: urgent'),
      marker: 'tier: urgent',
      path: 'agents[1].tier',
      message: /names tier "urgent", which is not defined under runtime.tiers/,
    },
    {
      name: 'a chain names an undefined endpoint',
      text: BASE.replace('premium: [primary, backup]', 'premium: [primary, backupp]'),
      marker: 'premium: [primary, backupp]',
      path: 'runtime.chains.premium[1]',
      message: /names endpoint "backupp", which is not defined/,
    },
    {
      name: 'an unknown field (a typo) gets a "did you mean"',
      text: BASE.replace('  - name: Yuna\n', '  - name: Yuna\n    chian: premium\n'),
      marker: 'chian: premium',
      path: 'agents[1].chian',
      message: /is not a known field; did you mean "chain"\?/,
    },
    {
      name: 'an emulator: endpoint without an emulator profile',
      text: BASE.slice(0, BASE.indexOf('emulator:\n  keys')),
      marker: 'emulator: openai',
      path: 'runtime.endpoints[0].emulator',
      message: /served by the emulator, but the scenario has no emulator: profile/,
    },
    {
      name: 'a job names an undefined agent',
      text: BASE.replace(/rounds:[\s\S]*?(?=emulator:)/, SCHEDULE.replace('agent: Kai', 'agent: Kay')),
      marker: 'agent: Kay',
      path: 'schedule.jobs[0].agent',
      message: /names agent "Kay", which is not defined under agents \(defined: Kai, Yuna\)/,
    },
    {
      name: 'a cron expression that does not parse',
      text: BASE.replace(/rounds:[\s\S]*?(?=emulator:)/, SCHEDULE.replace('*/2 * * * *', '*/2 25 * * *')),
      marker: "cron: '*/2 25 * * *'",
      path: 'schedule.jobs[0].cron',
      message: /"\*\/2 25 \* \* \*" does not parse: .*hour.*; write 5 fields/,
    },
    {
      name: 'both rounds and schedule',
      text: BASE.replace('emulator:\n  keys', `${SCHEDULE}emulator:\n  keys`),
      marker: 'schedule:',
      path: 'schedule',
      message: /either rounds: or schedule:, not both/,
    },
    {
      name: 'neither rounds nor schedule',
      text: BASE.replace(/rounds:[\s\S]*?(?=emulator:)/, ''),
      marker: 'name: tiny',
      path: '',
      message: /needs its work: rounds: .* or schedule:/,
    },
    {
      name: 'two agents with one name',
      text: BASE.replace('  - name: Yuna', '  - name: Kai # the second one'),
      marker: '# the second one',
      path: 'agents[1].name',
      message: /"Kai" is already agents\[0\]; agent names must be unique/,
    },
    {
      name: 'a number written as a word',
      text: BASE.replace('count: 2', 'count: two'),
      marker: 'count: two',
      path: 'rounds.count',
      message: /must be a number/,
    },
    {
      name: 'a required field missing',
      text: BASE.replace('{ id: U01, title: Checkout latency }', '{ id: U01 }'),
      marker: '{ id: U01 }',
      path: 'rounds.items[0].title',
      message: /is required \(a string\)/,
    },
    {
      name: 'an unknown built-in tool',
      text: BASE.replace('tools: [read_runbook]', 'tools: [read_runbok]'),
      marker: 'tools: [read_runbok]',
      path: 'agents[0].tools[0]',
      message: /names tool "read_runbok", which is not a built-in scenario tool; use one of .*read_runbook/,
    },
    {
      name: 'an emulator fault probability out of range',
      text: BASE.replace('probability: 0.5', 'probability: 5'),
      marker: 'probability: 5',
      path: 'emulator.faults[0].probability',
      message: /must be between 0 and 1/,
    },
    {
      name: 'an endpoint whose provider does not match its emulator flavor',
      text: BASE.replace('      emulator: anthropic', '      emulator: gemini'),
      marker: 'emulator: gemini',
      path: 'runtime.endpoints[1].emulator',
      message: /the gemini listener speaks provider: gemini/,
    },
    {
      name: 'a time scale on the emulator instead of the scenario',
      text: BASE.replace('emulator:\n  keys', 'emulator:\n  timeScale: 60\n  keys'),
      marker: 'timeScale: 60',
      path: 'emulator.timeScale',
      message: /set the scenario's top-level timeScale instead/,
    },
    {
      name: 'an unknown time zone',
      text: BASE.replace(/rounds:[\s\S]*?(?=emulator:)/, SCHEDULE.replace('Asia/Seoul', 'Asia/Soul')),
      marker: 'timezone: Asia/Soul',
      path: 'schedule.timezone',
      message: /"Asia\/Soul" is not an IANA time zone/,
    },
    {
      name: 'a fault matching a key the profile does not have',
      text: BASE.replace('key: primary }', 'key: primry }'),
      marker: 'key: primry }',
      path: 'emulator.faults[0].match.key',
      message: /names no key of the emulator profile \(aliases: primary, backup\); the rule would never fire/,
    },
  ];

  for (const c of cases) {
    it(c.name, () => {
      const { error, file } = refusal(c.text);
      const line = lineOf(c.text, c.marker);
      expect(error.source).toBe(shownAs(file));
      expect(error.line).toBe(line);
      expect(error.path).toBe(c.path);
      expect(error.message).toMatch(c.message);
      expect(error.message.startsWith(`${error.source}:${line}${c.path ? ` at ${c.path}` : ''}: `)).toBe(
        true,
      );
    });
  }

  it('a file beside the cwd whose path merely starts with it is named by its absolute path', () => {
    // The checkout at <dir>/bw, the scenario at <dir>/bw-scenarios-…/x.yaml: a string prefix, not a parent.
    const checkout = mkdtempSync(join(tmpdir(), 'bw-'));
    const beside = mkdtempSync(`${checkout}-scenarios-`);
    const file = join(beside, 'x.yaml');
    writeFileSync(file, BASE.replace('key: primary }', 'key: primry }'));
    const cwd = process.cwd();
    try {
      process.chdir(checkout);
      let error: ConfigError | undefined;
      try {
        loadScenario(file);
      } catch (e) {
        if (isConfigError(e)) error = e;
      }
      expect(error?.source).toBe(file);
      expect(shownAs(file)).toBe(file);
      // And one inside the cwd is named relative to it.
      expect(shownAs(join(checkout, 'sub', 'y.yaml'))).toBe(join('sub', 'y.yaml'));
    } finally {
      process.chdir(cwd);
      rmSync(beside, { recursive: true, force: true });
      rmSync(checkout, { recursive: true, force: true });
    }
  });

  it('broken YAML syntax names the line', () => {
    const text = BASE.replace('  count: 2', '  count: [2');
    const { error } = refusal(text);
    expect(error.message).toMatch(/is not valid YAML\/JSON/);
    expect(error.line).toBeGreaterThanOrEqual(lineOf(text, 'count: [2'));
  });

  it('a JSON scenario is refused with its line too', () => {
    const json = JSON.stringify(JSON.parse(JSON.stringify(parseScenario(BASE, 'inline'))), null, 2).replace(
      '"chain": "premium"',
      '"chain": "gold"',
    );
    const { error } = refusal(json, 'json');
    expect(error.line).toBe(lineOf(json, '"chain": "gold"'));
    expect(error.path).toBe('agents[0].chain');
  });

  it('a key never appears in the message', () => {
    const text = BASE.replace(
      'apiKey: sk-emu-primary-0001',
      'apiKey: sk-emu-primary-0001\n      apiKeyEnv: X',
    );
    const { error } = refusal(text);
    expect(error.path).toBe('runtime.endpoints[0].apiKey');
    expect(error.message).not.toContain('sk-emu-primary-0001');
  });
});
