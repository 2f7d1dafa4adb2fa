import type { LanguageModelV3, LanguageModelV3CallOptions } from '@ai-sdk/provider';
import {
  bulkhead,
  CircuitState,
  circuitBreaker,
  ExponentialBackoff,
  handleAll,
  type IPolicy,
  retry,
  SamplingBreaker,
  wrap,
} from 'cockatiel';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { type AgentRoundsResult, runAgentRounds } from './agent-rounds.ts';
import { aiSdkTurn } from './ai-sdk-turn.ts';
import type { BaselineEmulator } from './baseline-emulator.ts';
import { chainEndpoints, endpointModel, peerSetup } from './peer-models.ts';

/** Simulated ms (or per simulated second). Set on real timers ÷ timeScale (× for a rate). */
const DEADLINE_MS = 60_000;
const HALF_OPEN_AFTER_MS = 10_000;
const SAMPLING_MS = 30_000;
const MINIMUM_RPS = 0.2;

/**
 * Peer C of issue 34, "cockatiel": the AI SDK for the wire, cockatiel for resilience. `generateText` with
 * `maxRetries` 0 on a chain model whose endpoints each sit behind cockatiel `retry(handleAll, { maxAttempts: 3,
 * ExponentialBackoff })` around a `circuitBreaker(handleAll, SamplingBreaker{ threshold 0.3, duration 30 s,
 * minimumRps 0.2 }, halfOpenAfter 10 s)`; every attempt inside one shared `bulkhead` of the scenario's concurrency
 * limit (its queue unbounded: a full bulkhead makes an attempt wait, as a team would configure it, rather than
 * fail it); each attempt with a 60 s deadline. The next endpoint is tried when the breaker is open or the retries
 * are spent. Rounds, prompts and tools as the bare SDK baseline (`runAgentRounds`).
 *
 * cockatiel's timers and breaker windows are real (`setTimeout`, `Date.now`), so the peer runs against `emu` at the
 * scenario's timeScale; the durations above are the scenario's (simulated) ones, scaled to real time.
 * `ExponentialBackoff`'s defaults (128 ms initial, ×2, 30 s cap) stay as shipped, real.
 */
export async function runCockatielPeer(
  spec: ScenarioSpec,
  emu: BaselineEmulator,
): Promise<AgentRoundsResult> {
  const { scale, runtime, definitions, limit: tokens, historyTurns, maxTokens } = peerSetup(spec, emu);
  const shared = bulkhead(tokens, Number.POSITIVE_INFINITY);
  // One breaker and retry per endpoint, shared by every chain that names it (its health is the endpoint's).
  const guarded = new Map<string, { model: LanguageModelV3; policy: IPolicy; open: () => boolean }>();
  const guard = (e: Parameters<typeof endpointModel>[0]) => {
    let g = guarded.get(e.id);
    if (!g) {
      const breaker = circuitBreaker(handleAll, {
        halfOpenAfter: HALF_OPEN_AFTER_MS / scale,
        breaker: new SamplingBreaker({
          threshold: 0.3,
          duration: SAMPLING_MS / scale,
          minimumRps: MINIMUM_RPS * scale,
        }),
      });
      const attempts = retry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() });
      g = {
        model: endpointModel(e),
        policy: wrap(attempts, breaker, shared),
        open: () => breaker.state === CircuitState.Open,
      };
      guarded.set(e.id, g);
    }
    return g;
  };
  const models = new Map<string, LanguageModelV3>();
  const modelOf = (chain: string): LanguageModelV3 => {
    let model = models.get(chain);
    if (!model) {
      const endpoints = chainEndpoints(runtime, chain).map(guard);
      const doGenerate = async (o: LanguageModelV3CallOptions) => {
        let last: unknown = new Error(`chain ${chain}: every endpoint's breaker is open`);
        for (const g of endpoints) {
          if (g.open()) continue;
          try {
            return await g.policy.execute(({ signal }) =>
              g.model.doGenerate({
                ...o,
                abortSignal: deadline([signal, o.abortSignal], DEADLINE_MS / scale),
              }),
            );
          } catch (e) {
            // Retries spent, or the breaker opened meanwhile (BrokenCircuitError): the next endpoint.
            last = e;
          }
        }
        throw last;
      };
      model = {
        specificationVersion: 'v3',
        provider: 'cockatiel-chain',
        modelId: chain,
        supportedUrls: {},
        doGenerate,
        doStream: () => Promise.reject(new Error('the cockatiel peer does not stream')),
      };
      models.set(chain, model);
    }
    return model;
  };
  return runAgentRounds(spec, definitions, 'peer-c', (agent, key, prompt, memory) =>
    aiSdkTurn({
      agent,
      key,
      prompt,
      memory,
      historyTurns,
      maxTokens,
      model: modelOf(agent.chain),
      maxRetries: 0,
    }),
  );
}

/** The attempt's deadline (real ms) on top of the policy's and the caller's signals. */
function deadline(signals: readonly (AbortSignal | undefined)[], ms: number): AbortSignal {
  return AbortSignal.any([
    ...signals.filter((s): s is AbortSignal => s !== undefined),
    AbortSignal.timeout(ms),
  ]);
}
