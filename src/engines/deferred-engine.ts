import { ConfigError } from '../core/errors/config-error.ts';
import type { Clock } from '../clock/clock.ts';
import { holdClock } from '../clock/virtual-clock.ts';
import type { CallCredential } from './call-credential.ts';
import type { ParsedEndpointConfig } from './endpoint-config.ts';
import type {
  EndpointDescriptor,
  Engine,
  EngineRequest,
  EngineResult,
  StreamSink,
} from '../core/engine-types.ts';

/**
 * The engine of a parsed endpoint, its provider SDK loaded on the first call. The three SDKs cost about half a
 * second to import together; a program that embeds breakwater pays for the ones its endpoints use, when they
 * are first used. Once loaded, a call goes straight to the SDK's engine (no extra await on the hot path).
 *
 * @example
 * ```ts
 * const engine = deferredSdkEngine(parsed, describeEndpoint(parsed), systemClock, Date.now, credential);
 * await engine.call({ messages: [{ role: 'user', content: 'Hi' }], maxTokens: 64, idempotencyKey: 'k1' });
 * ```
 */
export function deferredSdkEngine(
  config: ParsedEndpointConfig,
  endpoint: EndpointDescriptor,
  clock: Clock,
  wallNow: () => number,
  credential: CallCredential | undefined,
  wireScale = 1,
  quotaDayNow?: () => number,
): Engine {
  // Checked here, where every SDK engine is made (createEngine's and BYOK keys'): 0 would make every wait 0 and
  // the cap infinite, NaN every cooldown NaN.
  if (!(Number.isFinite(wireScale) && wireScale > 0))
    throw new ConfigError({
      source: `endpoint "${config.id}"`,
      path: 'wireScale',
      message: `is ${wireScale}; set a number > 0`,
    });
  return deferredEngine(endpoint, async () => {
    // Loading an SDK is real work (about a second for all three): a virtual clock must not jump over it, or the
    // first call's lease would run out before it is sent.
    const unhold = holdClock(clock);
    try {
      return await loadSdkEngine(config, endpoint, clock, wallNow, credential, wireScale, quotaDayNow);
    } finally {
      unhold();
    }
  });
}

async function loadSdkEngine(
  config: ParsedEndpointConfig,
  endpoint: EndpointDescriptor,
  clock: Clock,
  wallNow: () => number,
  credential: CallCredential | undefined,
  wireScale: number,
  quotaDayNow: (() => number) | undefined,
): Promise<Engine> {
  switch (config.provider) {
    case 'anthropic': {
      const { createAnthropicEngine } = await import('./anthropic-engine.ts');
      return createAnthropicEngine(config, endpoint, clock, wallNow, credential, wireScale, quotaDayNow);
    }
    case 'gemini': {
      const { createGeminiEngine } = await import('./gemini-engine.ts');
      return createGeminiEngine(config, endpoint, clock, wallNow, credential, wireScale, quotaDayNow);
    }
    case 'openai':
    case 'openai-compatible': {
      const { createOpenAIEngine } = await import('./openai-engine.ts');
      return createOpenAIEngine(config, endpoint, clock, wallNow, credential, wireScale, quotaDayNow);
    }
  }
}

function deferredEngine(endpoint: EndpointDescriptor, load: () => Promise<Engine>): Engine {
  let engine: Engine | undefined;
  let loading: Promise<Engine> | undefined;
  const loaded = (): Promise<Engine> => {
    loading ??= load().then(
      (e) => {
        engine = e;
        return e;
      },
      (e: unknown) => {
        // A failed import (a broken install) is tried again on the next call rather than remembered.
        loading = undefined;
        throw e;
      },
    );
    return loading;
  };
  const streamOn = (e: Engine, request: EngineRequest, sink: StreamSink) =>
    e.stream ? e.stream(request, sink) : e.call(request);
  return {
    endpoint,
    // Every engine it loads takes `request.abort` (the SDK engines above).
    takesCallAbort: true,
    call(request: EngineRequest): Promise<EngineResult> {
      if (engine) return engine.call(request);
      return loaded().then((e) => e.call(request));
    },
    stream(request: EngineRequest, sink: StreamSink): Promise<EngineResult> {
      if (engine) return streamOn(engine, request, sink);
      return loaded().then((e) => streamOn(e, request, sink));
    },
  };
}
