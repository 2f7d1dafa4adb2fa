import OpenAI from 'openai';
import { startEmulator } from '../../src/emulator/emulator-server.ts';
import type { EmulatorStats } from '../../src/emulator/emulator-types.ts';
import type { ChatMessage } from '../../src/core/engine-types.ts';
import { fromChatCompletion, toOpenAIBody } from '../../src/engines/openai-engine.ts';
import { type PeerAnswer, roundPrompt } from '../../src/runs/round-prompt.ts';
import { isNoAgentDefinition, type LlmAgentDefinition } from '../../src/runtime/agent-definition.ts';
import { buildRequest } from '../../src/runtime/prompt-builder.ts';
import { type AgentMemory, emptyMemory } from '../../src/core/turn.ts';
import { scenarioRuntimeConfig } from '../../src/scenarios/scenario-endpoints.ts';
import { scenarioAgents } from '../../src/scenarios/scenario-tools.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';

/** What one baseline run gives the goodput benchmark. */
export interface BareRunResult {
  /** Simulated ms from the first call to the last turn. */
  readonly makespanMs: number;
  readonly turns: number;
  readonly failedTurns: number;
  readonly emulatorStats: EmulatorStats;
  readonly realMs: number;
}

/** Tool round trips one turn may take before it is given up (as the agent machine's steps). */
const MAX_STEPS = 6;

/**
 * The "bare SDK" baseline of a rounds scenario: each agent calls the FIRST endpoint of its chain with the
 * provider's SDK as shipped (default retries: `maxRetries` 2, the SDK's own backoff honouring Retry-After),
 * no fallback, no shared limits. Agents run in parallel, each one's turns in order (as the round runner asks
 * them); the prompt is the one breakwater's agents send (role, memory slots, last 6 exchanges, round prompt
 * quoting the others' previous answers), with the same tool round trips. A turn whose call still throws after
 * the SDK's retries is failed.
 *
 * The emulator runs on the real clock with the scenario's `timeScale`, so the SDK's real-time retry sleeps
 * and the emulated windows, latencies and Retry-After values stay consistent; makespan is reported in
 * simulated ms. Only OpenAI-wire primaries are supported (agent8-storm's are).
 */
export async function runBareSdk(spec: ScenarioSpec): Promise<BareRunResult> {
  const scale = spec.timeScale ?? 1;
  const emu = await startEmulator({ profile: { ...(spec.emulator ?? {}), timeScale: scale } });
  try {
    const runtime = scenarioRuntimeConfig(spec, { baseURL: (f) => emu.baseURL(f) });
    const definitions = scenarioAgents({ ...spec, runtime } as ScenarioSpec).filter(
      (d): d is LlmAgentDefinition => !isNoAgentDefinition(d),
    );
    const clients = new Map<string, OpenAI>();
    const primaryOf = (agent: LlmAgentDefinition) => {
      const id = runtime.chains[agent.chain]![0]!;
      const endpoint = runtime.endpoints.find((e) => e.id === id)!;
      if (endpoint.provider !== 'openai' && endpoint.provider !== 'openai-compatible')
        throw new Error(`bare baseline: ${endpoint.id} is ${endpoint.provider}; only OpenAI-wire primaries`);
      let client = clients.get(id);
      if (!client) {
        client = new OpenAI({ apiKey: endpoint.apiKey ?? 'no-key', baseURL: endpoint.baseURL ?? null });
        clients.set(id, client);
      }
      return { endpoint, client };
    };
    const items = spec.rounds!.items;
    const rounds = spec.rounds!.count;
    const maxTokens = runtime.agentDefaults?.maxTokens ?? 512;
    const historyTurns = runtime.agentDefaults?.historyTurns ?? 6;
    const memories = new Map<string, AgentMemory>(definitions.map((d) => [d.name, emptyMemory(d.memory)]));
    let turns = 0;
    let failedTurns = 0;

    const turn = async (
      agent: LlmAgentDefinition,
      key: string,
      prompt: string,
    ): Promise<string | undefined> => {
      const { endpoint, client } = primaryOf(agent);
      const messages: ChatMessage[] = [{ role: 'user', content: prompt }];
      const tools = Object.entries(agent.tools ?? {}).map(([name, t]) => ({
        name,
        ...(t.description ? { description: t.description } : {}),
        parameters: t.parameters,
      }));
      for (let step = 0; step < MAX_STEPS; step++) {
        const request = buildRequest({
          ...(agent.role ? { role: agent.role } : {}),
          memory: memories.get(agent.name)!,
          historyTurns,
          turnMessages: messages,
          tools,
          maxTokens: agent.maxTokens ?? maxTokens,
          idempotencyKey: `${key}:call${step}`,
        });
        const completion = await client.chat.completions.create(
          toOpenAIBody(endpoint.model, request, endpoint.provider === 'openai-compatible'),
          { headers: { 'Idempotency-Key': request.idempotencyKey } },
        );
        const out = fromChatCompletion(completion, endpoint.model);
        if (out.toolCalls.length === 0 || tools.length === 0) return out.text;
        if (out.text) messages.push({ role: 'assistant', content: out.text });
        for (const call of out.toolCalls) messages.push({ role: 'tool_call', call });
        for (const call of out.toolCalls) {
          const t = agent.tools?.[call.name];
          const value = t?.run
            ? await t.run(call.arguments, {
                signal: new AbortController().signal,
                agent: agent.name,
                idempotencyKey: `${key}:tool${step}:${call.id}`,
              })
            : `unknown tool "${call.name}"`;
          messages.push({
            role: 'tool_result',
            toolCallId: call.id,
            toolName: call.name,
            content: typeof value === 'string' ? value : JSON.stringify(value),
          });
        }
      }
      throw new Error(`more than ${MAX_STEPS} tool round trips`);
    };

    const t0 = Date.now();
    let previous = new Map<string, PeerAnswer[]>();
    for (let round = 1; round <= rounds; round++) {
      const current = new Map<string, PeerAnswer[]>();
      await Promise.all(
        definitions.map(async (agent) => {
          for (const item of items) {
            const key = `bare:${round}:${item.id}:${agent.name}`;
            const peers = (previous.get(item.id) ?? []).filter((p) => p.agent !== agent.name);
            const prompt = roundPrompt(item, round, rounds, peers);
            turns++;
            let answer: string | undefined;
            try {
              answer = await turn(agent, key, prompt);
            } catch {
              failedTurns++;
            }
            if (answer === undefined) continue;
            const memory = memories.get(agent.name)!;
            memories.set(agent.name, {
              ...memory,
              utterances: [...memory.utterances, { turnId: key, prompt, answer, degraded: false }],
            });
            const list = current.get(item.id) ?? [];
            list.push({ agent: agent.name, answer });
            current.set(item.id, list);
          }
        }),
      );
      previous = current;
    }
    const realMs = Date.now() - t0;
    return { makespanMs: realMs * scale, turns, failedTurns, emulatorStats: emu.stats(), realMs };
  } finally {
    await emu.close();
  }
}
