import OpenAI from 'openai';
import type { ChatMessage, ToolCall } from '../../src/core/engine-types.ts';
import { fromChatCompletion, toOpenAIBody } from '../../src/engines/openai-engine.ts';
import { isNoAgentDefinition, type LlmAgentDefinition } from '../../src/runtime/agent-definition.ts';
import { buildRequest } from '../../src/runtime/prompt-builder.ts';
import type { AgentMemory } from '../../src/core/turn.ts';
import { scenarioRuntimeConfig } from '../../src/scenarios/scenario-endpoints.ts';
import { scenarioAgents } from '../../src/scenarios/scenario-tools.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { type AgentRoundsResult, runAgentRounds } from './agent-rounds.ts';
import type { BaselineEmulator } from './baseline-emulator.ts';

/** Tool round trips one turn may take before it is given up (as the agent machine's steps). */
export const MAX_STEPS = 6;

/**
 * The "bare SDK" baseline of a rounds scenario: each agent calls the FIRST endpoint of its chain with the
 * provider's SDK as shipped (default retries: `maxRetries` 2, the SDK's own backoff honouring Retry-After),
 * no fallback, no shared limits. Agents run in parallel, each one's turns in order (`runAgentRounds`, as the
 * round runner asks them); the prompt is the one breakwater's agents send (role, memory slots, last 6 exchanges,
 * round prompt quoting the others' previous answers), with the same tool round trips. A turn whose call still
 * throws after the SDK's retries is failed.
 *
 * `emu` runs on the real clock with the scenario's `timeScale` (`startBaselineEmulator`), so the SDK's real-time
 * retry sleeps and the emulated windows, latencies and Retry-After values stay consistent; makespan is reported
 * in simulated ms. Only OpenAI-wire primaries are supported (agent8-storm's are).
 */
export async function runBareSdk(spec: ScenarioSpec, emu: BaselineEmulator): Promise<AgentRoundsResult> {
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
  const maxTokens = runtime.agentDefaults?.maxTokens ?? 512;
  const historyTurns = runtime.agentDefaults?.historyTurns ?? 6;

  const turn = async (
    agent: LlmAgentDefinition,
    key: string,
    prompt: string,
    memory: AgentMemory,
  ): Promise<string> => {
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
        memory,
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
      messages.push(...(await runTools(agent, key, step, out.toolCalls)));
    }
    throw new Error(`more than ${MAX_STEPS} tool round trips`);
  };

  return runAgentRounds(spec, definitions, 'bare', turn);
}

/** Runs a step's tool calls as the agent's own tools (the same for every baseline); the results as messages. */
export async function runTools(
  agent: LlmAgentDefinition,
  key: string,
  step: number,
  calls: readonly ToolCall[],
): Promise<ChatMessage[]> {
  const out: ChatMessage[] = [];
  for (const call of calls) {
    const t = agent.tools?.[call.name];
    const value = t?.run
      ? await t.run(call.arguments, {
          signal: new AbortController().signal,
          agent: agent.name,
          idempotencyKey: `${key}:tool${step}:${call.id}`,
        })
      : `unknown tool "${call.name}"`;
    out.push({
      role: 'tool_result',
      toolCallId: call.id,
      toolName: call.name,
      content: typeof value === 'string' ? value : JSON.stringify(value),
    });
  }
  return out;
}
