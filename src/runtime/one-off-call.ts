import { randomUUID } from 'node:crypto';
import type { ChatMessage } from '../core/engine-types.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import type { LlmAgentDefinition } from './agent-definition.ts';
import type { AgentHandle, AskOptions } from './agent-handle-types.ts';
import type { CallOptions, SpawnOptions } from './supervisor-types.ts';
import type { Turn } from '../core/turn.ts';
import type { TurnStream } from './turn-stream.ts';

/** What the handle takes beyond the public {@link AskOptions}: the conversation of a one-off call. @internal */
export interface ConversationAskOptions extends AskOptions {
  readonly messages?: readonly ChatMessage[];
}

/**
 * `supervisor.call`: a one-off call under the same protection as an agent's turn. It runs as a short-lived agent
 * (the same statechart: tokens, breakers, cooldowns, fallback, the degraded layer) that remembers nothing and is
 * stopped when its one turn ends, so two calls never see each other's messages.
 */
export function createOneOffCaller(
  spawn: (definition: LlmAgentDefinition, options?: SpawnOptions) => AgentHandle,
): (options: CallOptions) => Promise<Turn> {
  return async (options) => {
    const handle = spawnFor(spawn, options);
    const ask: ConversationAskOptions = {
      messages: options.messages,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.key !== undefined ? { key: options.key } : {}),
    };
    try {
      return await handle.ask(promptOf(options.messages), ask);
    } finally {
      handle.stop();
    }
  };
}

/**
 * `supervisor.stream`: the streaming twin of {@link createOneOffCaller}: the same short-lived agent, its one turn
 * streamed, stopped when the turn ends.
 */
export function createOneOffStreamer(
  spawn: (definition: LlmAgentDefinition, options?: SpawnOptions) => AgentHandle,
): (options: CallOptions) => TurnStream {
  return (options) => {
    const handle = spawnFor(spawn, options);
    const stream = handle.stream(promptOf(options.messages), {
      messages: options.messages,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.key !== undefined ? { key: options.key } : {}),
    } as ConversationAskOptions);
    stream.turn.then(
      () => handle.stop(),
      () => handle.stop(),
    );
    return stream;
  };
}

/** The one-off call's agent: no memory, the call's chain, tools and limits. Throws ConfigError on no messages. */
function spawnFor(
  spawn: (definition: LlmAgentDefinition, options?: SpawnOptions) => AgentHandle,
  options: CallOptions,
): AgentHandle {
  const messages = options.messages;
  if (!Array.isArray(messages) || messages.length === 0)
    throw new ConfigError({
      source: 'supervisor.call',
      path: 'messages',
      message: 'give at least one message (e.g. [{ role: "user", content: "…" }])',
    });
  const name = options.name ?? `call-${randomUUID().slice(0, 8)}`;
  return spawn({
    name,
    chain: options.chain,
    ...(options.tier !== undefined ? { tier: options.tier } : {}),
    ...(options.system !== undefined ? { role: options.system } : {}),
    ...(options.tools !== undefined ? { tools: options.tools } : {}),
    ...(options.maxTokens !== undefined ? { maxTokens: options.maxTokens } : {}),
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    ...(options.maxWaitMs !== undefined ? { maxWaitMs: options.maxWaitMs } : {}),
    ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
    ...(options.decisionTree !== undefined ? { decisionTree: options.decisionTree } : {}),
    // No memory: the prompt is exactly the messages given.
    historyTurns: 0,
  });
}

/** The text the degraded layer and the event log know the call by: its last user message. */
function promptOf(messages: readonly ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === 'user') return m.content;
  }
  return '';
}
