import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';

/**
 * One real SDK call that is expected to fail, returning what the SDK threw plus what a fetch
 * wrapper (like the engine adapter's) captured: the response headers and the error body text.
 */
export interface FailedCall {
  readonly error: unknown;
  readonly headers?: Headers;
  readonly bodyText?: string;
  /** Status of the last response, when it was an error (≥ 400). */
  readonly status?: number;
}

export interface CallOptions {
  /** Use the provider's streaming call and drain it. */
  readonly stream?: boolean;
  /** SDK timeout in ms (Anthropic/OpenAI `timeout`, genai `httpOptions.timeout`). */
  readonly timeout?: number;
  readonly signal?: AbortSignal;
  /** Extra RequestInit (e.g. an undici `dispatcher`). */
  readonly fetchOptions?: RequestInit & { dispatcher?: unknown };
  readonly apiKey?: string;
}

export const ANTHROPIC_KEY = 'sk-ant-api03-fixtureKEYabcdefghijklmnop-WXYZ';
export const OPENAI_KEY = 'sk-proj-fixtureKEYabcdefghijklmnopqrstuv9876';
export const GEMINI_KEY = 'AIzaSyFixtureKeyAbcdefghijklmnopqrst12';

function capturingFetch(
  extra: CallOptions['fetchOptions'],
  sink: { headers?: Headers; bodyText?: string; status?: number },
) {
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, { ...init, ...extra } as RequestInit);
    sink.headers = response.headers;
    if (!response.ok) {
      sink.status = response.status;
      sink.bodyText = await response.clone().text();
    }
    return response;
  };
}

async function failing(
  run: () => Promise<unknown>,
  sink: { headers?: Headers; bodyText?: string; status?: number },
): Promise<FailedCall> {
  try {
    await run();
  } catch (error) {
    return { error, ...sink };
  }
  throw new Error('expected the SDK call to fail, but it succeeded');
}

async function drain(stream: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of stream) {
    // consume
  }
}

export function anthropicCall(baseURL: string, opts: CallOptions = {}): Promise<FailedCall> {
  const sink: { headers?: Headers; bodyText?: string; status?: number } = {};
  const client = new Anthropic({
    baseURL,
    apiKey: opts.apiKey ?? ANTHROPIC_KEY,
    maxRetries: 0,
    fetch: capturingFetch(opts.fetchOptions, sink),
    ...(opts.timeout !== undefined ? { timeout: opts.timeout } : {}),
  });
  const body = {
    model: 'claude-sonnet-4-6',
    max_tokens: 64,
    messages: [{ role: 'user' as const, content: 'Hello' }],
  };
  const reqOpts = opts.signal ? { signal: opts.signal } : {};
  return failing(async () => {
    if (opts.stream) await drain(await client.messages.create({ ...body, stream: true }, reqOpts));
    else await client.messages.create(body, reqOpts);
  }, sink);
}

export function openaiCall(baseURL: string, opts: CallOptions = {}): Promise<FailedCall> {
  const sink: { headers?: Headers; bodyText?: string; status?: number } = {};
  const client = new OpenAI({
    baseURL,
    apiKey: opts.apiKey ?? OPENAI_KEY,
    maxRetries: 0,
    fetch: capturingFetch(opts.fetchOptions, sink),
    ...(opts.timeout !== undefined ? { timeout: opts.timeout } : {}),
  });
  const body = { model: 'gpt-4o', messages: [{ role: 'user' as const, content: 'Hello' }] };
  const reqOpts = opts.signal ? { signal: opts.signal } : {};
  return failing(async () => {
    if (opts.stream) await drain(await client.chat.completions.create({ ...body, stream: true }, reqOpts));
    else await client.chat.completions.create(body, reqOpts);
  }, sink);
}

export function geminiCall(baseUrl: string, opts: CallOptions = {}): Promise<FailedCall> {
  const sink: { headers?: Headers; bodyText?: string; status?: number } = {};
  const ai = new GoogleGenAI({
    apiKey: opts.apiKey ?? GEMINI_KEY,
    httpOptions: {
      baseUrl,
      ...(opts.timeout !== undefined ? { timeout: opts.timeout } : {}),
      fetch: capturingFetch(opts.fetchOptions, sink) as typeof fetch,
    },
  });
  const params = {
    model: 'gemini-2.5-flash',
    contents: 'Hello',
    ...(opts.signal ? { config: { abortSignal: opts.signal } } : {}),
  };
  return failing(async () => {
    if (opts.stream) await drain(await ai.models.generateContentStream(params));
    else await ai.models.generateContent(params);
  }, sink);
}
