import type { ChatMessage, EngineRequest } from '../core/engine-types.ts';
import type { PromptParts } from '../core/turn.ts';

/** Earlier tool results rendered into the system prompt (the most recent ones). */
export const MAX_REMEMBERED_TOOL_RESULTS = 20;

/**
 * Builds the engine request of an agent from its memory alone, so the same memory gives the same
 * prompt on any engine: after a crash or an engine swap the next prompt is the one that would have
 * been sent.
 *
 * @example
 * ```ts
 * const req = buildRequest({ role: 'You are Kai.', memory, historyTurns: 6, turnMessages: [{ role: 'user', content: 'Item 3?' }], tools: [], maxTokens: 512, idempotencyKey: 'run1:1:item3:Kai:0' });
 * ```
 */
export function buildRequest(parts: PromptParts): Omit<EngineRequest, 'signal'> {
  // Sorted: JSONB does not keep key order, and a resumed agent must send byte-for-byte the same prompt.
  const slots = Object.entries(parts.memory.slots).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const systemLines: string[] = [];
  if (parts.role) systemLines.push(parts.role);
  if (slots.length > 0) {
    systemLines.push('Memory:');
    for (const [k, v] of slots) systemLines.push(`- ${k}: ${v}`);
  }
  // Tool results of earlier turns are working memory too: an agent moved to another engine must still know them.
  const earlier = parts.memory.toolResults.slice(-MAX_REMEMBERED_TOOL_RESULTS);
  if (earlier.length > 0) {
    systemLines.push('Tool results so far:');
    for (const r of earlier) {
      systemLines.push(
        `- ${r.call.name}(${JSON.stringify(r.call.arguments)})${r.isError ? ' failed' : ''}: ${r.result}`,
      );
    }
  }
  const messages: ChatMessage[] = [];
  const history = parts.historyTurns > 0 ? parts.memory.utterances.slice(-parts.historyTurns) : [];
  for (const u of history) {
    messages.push({ role: 'user', content: u.prompt });
    messages.push({ role: 'assistant', content: u.answer });
  }
  messages.push(...parts.turnMessages);
  return {
    ...(systemLines.length > 0 ? { system: systemLines.join('\n') } : {}),
    messages,
    ...(parts.tools.length > 0 ? { tools: parts.tools } : {}),
    maxTokens: parts.maxTokens,
    ...(parts.temperature !== undefined ? { temperature: parts.temperature } : {}),
    idempotencyKey: parts.idempotencyKey,
  };
}

/** Rough token estimate (chars ÷ 4) used to reserve TPM before the provider reports usage. */
export function estimateRequestTokens(request: Omit<EngineRequest, 'signal'>): number {
  let chars = request.system?.length ?? 0;
  for (const m of request.messages) {
    if (m.role === 'tool_call') chars += JSON.stringify(m.call.arguments).length + m.call.name.length;
    else chars += m.content.length;
  }
  if (request.tools) chars += JSON.stringify(request.tools).length;
  return Math.ceil(chars / 4) + request.maxTokens;
}
