import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import type { Emulator } from '../../src/emulator/emulator-server.ts';
import type { EmulatorFlavor } from '../../src/emulator/emulator-types.ts';

/** Real SDK clients pointed at an emulator, SDK retries off (breakwater owns retries). */
export function anthropicClient(emu: Emulator, apiKey = 'sk-ant-test-key-0001', timeout?: number): Anthropic {
  return new Anthropic({
    apiKey,
    baseURL: emu.baseURL('anthropic'),
    maxRetries: 0,
    ...(timeout ? { timeout } : {}),
  });
}

export function openaiClient(
  emu: Emulator,
  flavor: Extract<EmulatorFlavor, 'openai' | 'vllm' | 'ollama' | 'gemini-compat'> = 'openai',
  apiKey = 'sk-openai-test-key-0001',
  timeout?: number,
): OpenAI {
  return new OpenAI({ apiKey, baseURL: emu.baseURL(flavor), maxRetries: 0, ...(timeout ? { timeout } : {}) });
}

export function geminiClient(
  emu: Emulator,
  apiKey = 'AIzaTestKey0000000000000000001',
  timeout?: number,
): GoogleGenAI {
  return new GoogleGenAI({
    apiKey,
    httpOptions: { baseUrl: emu.baseURL('gemini'), ...(timeout ? { timeout } : {}) },
  });
}

export const WEATHER_SCHEMA: { type: 'object'; properties: Record<string, unknown>; required: string[] } = {
  type: 'object',
  properties: {
    city: { type: 'string' },
    days: { type: 'integer' },
    metric: { type: 'boolean' },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
  },
  required: ['city', 'days', 'metric', 'unit'],
};

export const EXPECTED_ARGS = { city: 'sample', days: 1, metric: true, unit: 'celsius' };

/** Captures a rejection (the value the SDK threw). */
export async function rejectionOf(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected the call to fail, but it succeeded');
}
