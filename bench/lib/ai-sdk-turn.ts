import type { LanguageModelV3 } from '@ai-sdk/provider';
import { generateText, jsonSchema, type ModelMessage, type Tool } from 'ai';
import type { ChatMessage, EngineRequest } from '../../src/core/engine-types.ts';
import type { AgentMemory } from '../../src/core/turn.ts';
import type { LlmAgentDefinition } from '../../src/runtime/agent-definition.ts';
import { buildRequest } from '../../src/runtime/prompt-builder.ts';
import { MAX_STEPS, runTools } from './bare-sdk-run.ts';

/** How a peer baseline calls the AI SDK for one agent's turn. */
export interface AiSdkTurnOptions {
  readonly agent: LlmAgentDefinition;
  /** The turn's key; each step's call carries `<key>:call<step>` as its Idempotency-Key (the SDK's retries too). */
  readonly key: string;
  readonly prompt: string;
  readonly memory: AgentMemory;
  readonly historyTurns: number;
  readonly maxTokens: number;
  /** The model of the agent's chain (a fallback model, a chain of breakers…). */
  readonly model: LanguageModelV3;
  /** `generateText`'s own retries (the AI SDK's backoff, honouring Retry-After). */
  readonly maxRetries: number;
}

/**
 * One turn of a peer baseline with AI SDK `generateText`: the prompt breakwater's agents send (`buildRequest`:
 * role, memory slots, the last exchanges, the round prompt), one `generateText` per tool round trip so every
 * upstream call has its own Idempotency-Key (as breakwater's and the bare SDK's `<turn>:call<step>`), the tools
 * run as the agent's own. Throws when the SDK gives up: the turn failed.
 */
export async function aiSdkTurn(o: AiSdkTurnOptions): Promise<string> {
  const messages: ChatMessage[] = [{ role: 'user', content: o.prompt }];
  const defs = Object.entries(o.agent.tools ?? {});
  // No `execute`: the loop below runs the tools, one `generateText` per step.
  const tools: Record<string, Tool> = Object.fromEntries(
    defs.map(([name, t]) => [
      name,
      { ...(t.description ? { description: t.description } : {}), inputSchema: jsonSchema(t.parameters) },
    ]),
  );
  for (let step = 0; step < MAX_STEPS; step++) {
    const request = buildRequest({
      ...(o.agent.role ? { role: o.agent.role } : {}),
      memory: o.memory,
      historyTurns: o.historyTurns,
      turnMessages: messages,
      tools: defs.map(([name, t]) => ({ name, parameters: t.parameters })),
      maxTokens: o.agent.maxTokens ?? o.maxTokens,
      idempotencyKey: `${o.key}:call${step}`,
    });
    const result = await generateText({
      model: o.model,
      ...(request.system ? { system: request.system } : {}),
      messages: toModelMessages(request.messages),
      ...(defs.length > 0 ? { tools } : {}),
      maxOutputTokens: request.maxTokens,
      maxRetries: o.maxRetries,
      headers: { 'Idempotency-Key': request.idempotencyKey },
    });
    if (result.toolCalls.length === 0 || defs.length === 0) return result.text;
    const calls = result.toolCalls.map((c) => ({
      id: c.toolCallId,
      name: c.toolName,
      arguments: (c.input ?? {}) as Record<string, unknown>,
    }));
    if (result.text) messages.push({ role: 'assistant', content: result.text });
    for (const call of calls) messages.push({ role: 'tool_call', call });
    messages.push(...(await runTools(o.agent, o.key, step, calls)));
  }
  throw new Error(`more than ${MAX_STEPS} tool round trips`);
}

/** breakwater's messages as the AI SDK's: a text and the tool calls after it are one assistant message. */
export function toModelMessages(messages: EngineRequest['messages']): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (const m of messages) {
    const last = out[out.length - 1];
    if (m.role === 'user') out.push({ role: 'user', content: m.content });
    else if (m.role === 'assistant')
      out.push({ role: 'assistant', content: [{ type: 'text', text: m.content }] });
    else if (m.role === 'tool_call') {
      const part = {
        type: 'tool-call' as const,
        toolCallId: m.call.id,
        toolName: m.call.name,
        input: m.call.arguments,
      };
      if (last?.role === 'assistant' && Array.isArray(last.content)) last.content.push(part);
      else out.push({ role: 'assistant', content: [part] });
    } else {
      const part = {
        type: 'tool-result' as const,
        toolCallId: m.toolCallId,
        toolName: m.toolName,
        output: m.isError
          ? { type: 'error-text' as const, value: m.content }
          : { type: 'text' as const, value: m.content },
      };
      if (last?.role === 'tool') last.content.push(part);
      else out.push({ role: 'tool', content: [part] });
    }
  }
  return out;
}
