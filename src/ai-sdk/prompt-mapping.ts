import type {
  LanguageModelV3CallOptions,
  LanguageModelV3Prompt,
  LanguageModelV3ToolResultOutput,
  SharedV3Warning,
} from '@ai-sdk/provider';
import type { ChatMessage } from '../core/engine-types.ts';
import type { ClientTool } from '../runtime/agent-definition.ts';
import { UnsupportedPromptError } from './ai-sdk-errors.ts';

/*
 * The AI SDK's prompt and options → breakwater's provider-neutral request. Only types come from
 * @ai-sdk/provider: the mapping runs without it installed.
 */

/** A breakwater request built from one `doGenerate`/`doStream` call, and what it could not carry. */
export interface MappedCall {
  readonly system?: string;
  readonly messages: readonly ChatMessage[];
  readonly tools?: Readonly<Record<string, ClientTool>>;
  readonly maxTokens?: number;
  readonly temperature?: number;
  readonly warnings: SharedV3Warning[];
}

/** Maps the AI SDK's call options; settings breakwater's engines do not send become `unsupported` warnings. */
export function mapCallOptions(options: LanguageModelV3CallOptions): MappedCall {
  const warnings: SharedV3Warning[] = [];
  const { system, messages } = mapPrompt(options.prompt);
  for (const feature of [
    'topP',
    'topK',
    'stopSequences',
    'presencePenalty',
    'frequencyPenalty',
    'seed',
  ] as const) {
    if (options[feature] !== undefined) warnings.push({ type: 'unsupported', feature });
  }
  if (options.responseFormat?.type === 'json')
    warnings.push({ type: 'unsupported', feature: 'responseFormat', details: 'sent as plain text' });
  const tools: Record<string, ClientTool> = {};
  const choice = options.toolChoice?.type ?? 'auto';
  if (choice !== 'none') {
    for (const tool of options.tools ?? []) {
      if (tool.type !== 'function') {
        warnings.push({ type: 'unsupported', feature: `provider tool ${tool.id}` });
        continue;
      }
      tools[tool.name] = {
        ...(tool.description !== undefined ? { description: tool.description } : {}),
        parameters: tool.inputSchema as Readonly<Record<string, unknown>>,
      };
    }
  }
  if (choice === 'required' || choice === 'tool')
    warnings.push({ type: 'unsupported', feature: 'toolChoice', details: `"${choice}" is sent as "auto"` });
  return {
    ...(system !== undefined ? { system } : {}),
    messages,
    ...(Object.keys(tools).length > 0 ? { tools } : {}),
    ...(options.maxOutputTokens !== undefined ? { maxTokens: options.maxOutputTokens } : {}),
    ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
    warnings,
  };
}

/** System messages join into one system prompt; user, assistant and tool messages become chat messages. */
export function mapPrompt(prompt: LanguageModelV3Prompt): { system?: string; messages: ChatMessage[] } {
  const system: string[] = [];
  const messages: ChatMessage[] = [];
  for (const m of prompt) {
    switch (m.role) {
      case 'system':
        system.push(m.content);
        break;
      case 'user': {
        const text: string[] = [];
        for (const part of m.content) {
          if (part.type !== 'text') throw new UnsupportedPromptError(part.type, 'user');
          text.push(part.text);
        }
        messages.push({ role: 'user', content: text.join('\n') });
        break;
      }
      case 'assistant': {
        const text: string[] = [];
        const calls: ChatMessage[] = [];
        for (const part of m.content) {
          if (part.type === 'text') {
            // Text a streamed turn took back (a restart, a degraded end) was never the answer: not resent.
            if (!isWithdrawn(part.providerOptions)) text.push(part.text);
          } else if (part.type === 'tool-call') {
            if (part.providerExecuted)
              throw new UnsupportedPromptError('provider-executed tool-call', 'assistant');
            calls.push({
              role: 'tool_call',
              call: { id: part.toolCallId, name: part.toolName, arguments: argumentsOf(part.input) },
            });
          } else if (part.type === 'reasoning') {
            // Reasoning is the model's own scratch text: other providers cannot take it back, so it is not resent.
          } else throw new UnsupportedPromptError(part.type, 'assistant');
        }
        if (text.length > 0) messages.push({ role: 'assistant', content: text.join('') });
        messages.push(...calls);
        break;
      }
      case 'tool':
        for (const part of m.content) {
          if (part.type !== 'tool-result') continue; // approvals are for provider-executed tools
          const { content, isError } = resultText(part.output);
          messages.push({
            role: 'tool_result',
            toolCallId: part.toolCallId,
            toolName: part.toolName,
            content,
            ...(isError ? { isError } : {}),
          });
        }
        break;
    }
  }
  return { ...(system.length > 0 ? { system: system.join('\n\n') } : {}), messages };
}

/** A text part breakwater's `doStream` closed as withdrawn (its metadata comes back as the part's options). */
function isWithdrawn(options: unknown): boolean {
  const bw = (options as { breakwater?: unknown } | undefined)?.breakwater;
  return typeof bw === 'object' && bw !== null && (bw as { withdrawn?: unknown }).withdrawn === true;
}

function argumentsOf(input: unknown): Readonly<Record<string, unknown>> {
  const value = typeof input === 'string' ? safeParse(input) : input;
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return {};
  }
}

function resultText(output: LanguageModelV3ToolResultOutput): { content: string; isError: boolean } {
  switch (output.type) {
    case 'text':
      return { content: output.value, isError: false };
    case 'json':
      return { content: JSON.stringify(output.value), isError: false };
    case 'error-text':
      return { content: output.value, isError: true };
    case 'error-json':
      return { content: JSON.stringify(output.value), isError: true };
    case 'execution-denied':
      return { content: `execution denied${output.reason ? `: ${output.reason}` : ''}`, isError: true };
    case 'content':
      return {
        content: output.value.map((p) => (p.type === 'text' ? p.text : `[${p.type}]`)).join('\n'),
        isError: false,
      };
  }
}
