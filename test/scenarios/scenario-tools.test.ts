import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import { isNoAgentDefinition, type LlmAgentDefinition } from '../../src/runtime/agent-definition.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { loadScenario, parseScenario } from '../../src/scenarios/load-scenario.ts';
import {
  scenarioEndpoints,
  scenarioOrigin,
  scenarioRuntimeConfig,
} from '../../src/scenarios/scenario-endpoints.ts';
import { SCENARIO_TOOL_NAMES, SCENARIO_TOOLS, scenarioAgents } from '../../src/scenarios/scenario-tools.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';

const ctx = { signal: new AbortController().signal, agent: 'Yuna', idempotencyKey: 'k' };

describe('built-in scenario tools', () => {
  it('each has an object JSON Schema naming its required arguments', () => {
    expect(SCENARIO_TOOL_NAMES).toEqual(
      expect.arrayContaining([
        'lookup_metric',
        'read_runbook',
        'check_queue',
        'check_quota',
        'search_incidents',
      ]),
    );
    for (const name of SCENARIO_TOOL_NAMES) {
      const p = SCENARIO_TOOLS[name]!.parameters as { type: string; properties: object; required: string[] };
      expect(p.type).toBe('object');
      expect(p.required.length).toBeGreaterThan(0);
      for (const r of p.required) expect(Object.keys(p.properties)).toContain(r);
    }
  });

  it('results are derived from the arguments alone: same arguments, same result; other arguments, other data', async () => {
    const a = await SCENARIO_TOOLS.check_queue!.run({ queue: 'payments' }, ctx);
    const b = await SCENARIO_TOOLS.check_queue!.run({ queue: 'payments' }, { ...ctx, agent: 'Rex' });
    const c = await SCENARIO_TOOLS.check_queue!.run({ queue: 'search' }, ctx);
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    expect(a).toMatchObject({ queue: 'payments' });
    const metric = (await SCENARIO_TOOLS.lookup_metric!.run(
      { service: 'checkout', metric: 'latency' },
      ctx,
    )) as {
      unit: string;
      value: number;
    };
    expect(metric.unit).toBe('ms');
    expect(metric.value).toBeGreaterThan(0);
    const runbook = (await SCENARIO_TOOLS.read_runbook!.run({ topic: '429 storm' }, ctx)) as {
      steps: string[];
    };
    expect(runbook.steps.length).toBeGreaterThanOrEqual(3);
  });
});

describe('scenarioAgents', () => {
  it('turns agent8-storm into 8 LLM agent definitions with their tools resolved by name', () => {
    const spec = loadScenario('agent8-storm');
    const defs = scenarioAgents(spec) as LlmAgentDefinition[];
    expect(defs.map((d) => d.name)).toEqual(spec.agents.map((a) => a.name));
    const yuna = defs.find((d) => d.name === 'Yuna')!;
    expect(yuna).toMatchObject({ tier: 'incident', chain: 'premium' });
    expect(Object.keys(yuna.tools ?? {})).toEqual(['lookup_metric']);
    expect(yuna.tools?.lookup_metric).toBe(SCENARIO_TOOLS.lookup_metric);
    expect(yuna.memory).toEqual(spec.agents.find((a) => a.name === 'Yuna')!.memory);
  });

  it('a noAgent agent becomes plain-code work that needs no engine', async () => {
    const defs = scenarioAgents(loadScenario('morning-peak'));
    const flusher = defs.find((d) => d.name === 'telegram-outbox-flusher')!;
    expect(isNoAgentDefinition(flusher)).toBe(true);
    if (!isNoAgentDefinition(flusher)) return;
    expect(flusher.tier).toBe('ops');
    expect(await flusher.run('Send the queued messages', ctx)).toMatchObject({
      ok: true,
      job: 'telegram-outbox-flusher',
    });
  });

  it('an unknown tool name in a hand-built spec is a ConfigError naming agent and tool', () => {
    const spec = loadScenario('agent8-storm');
    const bad: ScenarioSpec = {
      ...spec,
      agents: [{ ...spec.agents[0]!, tools: ['read_runbook', 'summon_pager'] }],
    };
    try {
      scenarioAgents(bad);
      expect.unreachable();
    } catch (e) {
      expect(isConfigError(e)).toBe(true);
      expect((e as Error).message).toMatch(/at agents\[0\]\.tools\[1\]: names tool "summon_pager"/);
    }
  });
});

describe('scenario endpoints', () => {
  const spec = parseScenario(
    `name: ep
start: 2026-08-17T06:00:00+09:00
runtime:
  endpoints:
    - { id: emu, provider: openai, model: gpt-4o, emulator: openai, apiKey: primary }
    - { id: real, provider: anthropic, model: claude-sonnet-4-6, apiKeyEnv: ANTHROPIC_API_KEY }
  chains: { c: [emu, real] }
agents: [{ name: A, chain: c }]
rounds: { count: 1, items: [{ id: i, title: t }] }
emulator: { keys: [{ alias: primary, key: sk-emu-primary-0001 }] }
`,
    'inline',
  );

  it('fills the emulator baseURL, turns a key alias into the key, leaves real endpoints alone', () => {
    const [emu, real] = scenarioEndpoints(spec, { baseURL: (f) => `http://127.0.0.1:1/${f}` });
    expect(emu).toMatchObject({
      id: 'emu',
      apiKey: 'sk-emu-primary-0001',
      baseURL: 'http://127.0.0.1:1/openai',
    });
    expect(emu).not.toHaveProperty('emulator');
    expect(real).toMatchObject({ id: 'real', apiKeyEnv: 'ANTHROPIC_API_KEY' });
    expect(real).not.toHaveProperty('baseURL');
    expect(() => scenarioEndpoints(spec)).toThrow(
      /runtime.endpoints\[0\].emulator: endpoint "emu" is served by the emulator/,
    );
    expect(scenarioOrigin(spec, 0)).toBe(Date.parse('2026-08-17T06:00:00+09:00'));
  });
});

describe('a scenario agent with a built-in tool, end to end against the emulator', () => {
  let emulator: Emulator;
  let supervisor: Supervisor | undefined;
  beforeAll(async () => {
    emulator = await startEmulator({ profile: { seed: 4 } });
  });
  afterAll(async () => {
    await supervisor?.stop();
    await emulator.close();
  });

  it('the model asks for the tool, the tool runs, and its result is in the turn and the memory', async () => {
    const spec = parseScenario(
      `name: tool-e2e
runtime:
  endpoints: [{ id: primary, provider: anthropic, model: claude-sonnet-4-6, emulator: anthropic, apiKey: sk-ant-any-0001 }]
  chains: { premium: [primary] }
agents: [{ name: Rex, chain: premium, tools: [check_quota], memory: { quotas: tight } }]
rounds: { count: 1, items: [{ id: U04, title: Primary LLM provider returning 429s }] }
emulator: {}
`,
      'inline',
    );
    supervisor = createSupervisor(scenarioRuntimeConfig(spec, { baseURL: (f) => emulator.baseURL(f) }));
    const [rex] = scenarioAgents(spec).map((d) => supervisor!.spawnAgent(d));
    const turn = await rex!.ask('How much headroom is left on the primary?');
    expect(turn.outcome).toBe('answered');
    const result = turn.messages.find((m) => m.role === 'tool_result');
    expect(result).toMatchObject({ toolName: 'check_quota' });
    const expected = await SCENARIO_TOOLS.check_quota!.run(
      (turn.messages.find((m) => m.role === 'tool_call') as { call: { arguments: Record<string, unknown> } })
        .call.arguments,
      ctx,
    );
    expect(JSON.parse((result as { content: string }).content)).toEqual(expected);
    expect(turn.answer.text).toContain('check_quota');
    expect(rex!.memory().toolResults.map((r) => r.call.name)).toEqual(['check_quota']);
    expect(rex!.memory().slots).toEqual({ quotas: 'tight' });
  });
});
