import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { isNoAgentDefinition, type LlmAgentDefinition } from '../../src/runtime/agent-definition.ts';
import type { RuntimeConfigInput } from '../../src/runtime/runtime-config.ts';
import { scenarioRuntimeConfig } from '../../src/scenarios/scenario-endpoints.ts';
import { scenarioAgents } from '../../src/scenarios/scenario-tools.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import type { BaselineEmulator } from './baseline-emulator.ts';

type Endpoint = RuntimeConfigInput['endpoints'][number];

/**
 * An endpoint of the scenario as the AI SDK's own provider package for its wire talks to it, over real HTTP:
 * OpenAI and OpenAI-compatible (vLLM) through `@ai-sdk/openai`'s Chat Completions model (the API breakwater's
 * and the bare SDK's OpenAI calls use), Anthropic through `@ai-sdk/anthropic`, Gemini through `@ai-sdk/google`.
 * The emulator's Anthropic and Gemini URLs are roots; the packages want the versioned base.
 */
export function endpointModel(endpoint: Endpoint): LanguageModelV3 {
  const apiKey = endpoint.apiKey ?? 'no-key';
  const base = endpoint.baseURL ?? '';
  switch (endpoint.provider) {
    case 'openai':
    case 'openai-compatible':
      return createOpenAI({ apiKey, baseURL: base }).chat(endpoint.model);
    case 'anthropic':
      return createAnthropic({ apiKey, baseURL: `${base}/v1` })(endpoint.model);
    case 'gemini':
      return createGoogleGenerativeAI({ apiKey, baseURL: `${base}/v1beta` })(endpoint.model);
    default:
      throw new Error(`peer baselines: no AI SDK provider for ${endpoint.id} (${endpoint.provider})`);
  }
}

/**
 * `model` with a deadline on every upstream call: each `doGenerate`/`doStream` gets its own `timeoutMs`
 * (real ms), on top of the caller's signal, so one hung call does not hold the turn past it.
 */
export function withDeadline(model: LanguageModelV3, timeoutMs: number): LanguageModelV3 {
  const signal = (outer: AbortSignal | undefined) => {
    const t = AbortSignal.timeout(timeoutMs);
    return outer ? AbortSignal.any([outer, t]) : t;
  };
  return {
    specificationVersion: 'v3',
    provider: model.provider,
    modelId: model.modelId,
    supportedUrls: model.supportedUrls,
    doGenerate: (o) => model.doGenerate({ ...o, abortSignal: signal(o.abortSignal) }),
    doStream: (o) => model.doStream({ ...o, abortSignal: signal(o.abortSignal) }),
  };
}

/** A chain's endpoints, in order, from the resolved runtime config. */
export function chainEndpoints(runtime: RuntimeConfigInput, chain: string): Endpoint[] {
  const ids = runtime.chains[chain];
  if (!ids) throw new Error(`no chain "${chain}"`);
  return ids.map((id) => {
    const e = runtime.endpoints.find((x) => x.id === id);
    if (!e) throw new Error(`chain ${chain}: no endpoint "${id}"`);
    return e;
  });
}

/**
 * What every peer starts from: the scenario's timeScale (the peers' durations are simulated ms, set on real timers
 * ÷ this), its runtime config pointed at `emu`, its LLM agents, and the agents' history and output limits.
 */
export function peerSetup(spec: ScenarioSpec, emu: BaselineEmulator) {
  const runtime = scenarioRuntimeConfig(spec, { baseURL: (f) => emu.baseURL(f) });
  const definitions = scenarioAgents({ ...spec, runtime } as ScenarioSpec).filter(
    (d): d is LlmAgentDefinition => !isNoAgentDefinition(d),
  );
  return {
    scale: spec.timeScale ?? 1,
    runtime,
    definitions,
    limit: spec.runtime.concurrency?.limit ?? 3,
    historyTurns: runtime.agentDefaults?.historyTurns ?? 6,
    maxTokens: runtime.agentDefaults?.maxTokens ?? 512,
  };
}
