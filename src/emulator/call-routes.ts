import type { IncomingMessage } from 'node:http';
import type { EmulatorFlavor } from './emulator-types.ts';

/** Where a flavor's call endpoint lives, and what the URL says about model and streaming. */
export interface CallRoute {
  model?: string;
  stream?: boolean;
  /** The OpenAI Responses API rather than Chat Completions. */
  responses?: boolean;
}

/** Maps a method+path to a call route for this flavor, or undefined (→ provider 404). */
export function routeCall(flavor: EmulatorFlavor, method: string, pathname: string): CallRoute | undefined {
  if (method !== 'POST') return undefined;
  switch (flavor) {
    case 'anthropic':
      return pathname === '/v1/messages' ? {} : undefined;
    case 'openai':
      if (pathname === '/v1/responses') return { responses: true };
      return pathname === '/v1/chat/completions' ? {} : undefined;
    case 'vllm':
    case 'ollama':
      return pathname === '/v1/chat/completions' ? {} : undefined;
    case 'gemini-compat':
      return pathname === '/v1beta/openai/chat/completions' ? {} : undefined;
    case 'gemini': {
      const m = /^\/v1(?:beta|alpha)?\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(
        pathname,
      );
      return m ? { model: decodeURIComponent(m[1]!), stream: m[2] === 'streamGenerateContent' } : undefined;
    }
  }
}

/** The API key as each provider's SDK sends it. */
export function extractKey(flavor: EmulatorFlavor, req: IncomingMessage, url: URL): string | undefined {
  const bearer = /^Bearer\s+(.+)$/i.exec(String(req.headers.authorization ?? ''))?.[1]?.trim();
  if (flavor === 'anthropic') return (req.headers['x-api-key'] as string | undefined) ?? bearer;
  if (flavor === 'gemini')
    return (req.headers['x-goog-api-key'] as string | undefined) ?? url.searchParams.get('key') ?? undefined;
  return bearer;
}
