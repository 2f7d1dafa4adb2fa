import type { EndpointConfig } from '../../src/engines/endpoint-config.ts';
import type { ToolDefinition } from '../../src/core/engine-types.ts';
import type { EmulatorFlavor } from '../../src/emulator/emulator-types.ts';

/** Every provider kind (and every OpenAI-compatible flavor) as an endpoint config on the emulator. */

export const KEY = 'sk-roundtrip-key-0000000000000001';

export const weatherTool: ToolDefinition = {
  name: 'get_weather',
  description: 'Current weather of a city',
  parameters: {
    type: 'object',
    properties: {
      location: { type: 'string' },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      days: { type: 'integer' },
    },
    required: ['location', 'unit', 'days'],
  },
};

export interface Target {
  readonly name: string;
  readonly flavor: EmulatorFlavor;
  readonly config: (baseURL: string) => EndpointConfig;
}

export const TARGETS: readonly Target[] = [
  {
    name: 'anthropic',
    flavor: 'anthropic',
    config: (baseURL) => ({
      id: 'anthropic',
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      apiKey: KEY,
      baseURL,
    }),
  },
  {
    name: 'openai',
    flavor: 'openai',
    config: (baseURL) => ({ id: 'openai', provider: 'openai', model: 'gpt-4o-mini', apiKey: KEY, baseURL }),
  },
  {
    name: 'gemini',
    flavor: 'gemini',
    config: (baseURL) => ({
      id: 'gemini',
      provider: 'gemini',
      model: 'gemini-2.5-flash',
      apiKey: KEY,
      baseURL,
    }),
  },
  {
    name: 'openai-compatible/vllm',
    flavor: 'vllm',
    config: (baseURL) => ({
      id: 'vllm',
      provider: 'openai-compatible',
      flavor: 'vllm',
      model: 'qwen2.5-7b',
      baseURL,
    }),
  },
  {
    name: 'openai-compatible/ollama',
    flavor: 'ollama',
    config: (baseURL) => ({
      id: 'ollama',
      provider: 'openai-compatible',
      flavor: 'ollama',
      model: 'llama3.1',
      baseURL,
    }),
  },
  {
    name: 'openai-compatible/gemini-compat',
    flavor: 'gemini-compat',
    config: (baseURL) => ({
      id: 'gcompat',
      provider: 'openai-compatible',
      flavor: 'gemini-compat',
      model: 'gemini-2.5-flash',
      apiKey: KEY,
      baseURL,
    }),
  },
];
