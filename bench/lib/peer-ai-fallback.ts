import type { LanguageModelV3 } from '@ai-sdk/provider';
import { createFallback } from 'ai-fallback';
import pLimit from 'p-limit';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { type AgentRoundsResult, runAgentRounds } from './agent-rounds.ts';
import { aiSdkTurn } from './ai-sdk-turn.ts';
import type { BaselineEmulator } from './baseline-emulator.ts';
import { chainEndpoints, endpointModel, peerSetup, withDeadline } from './peer-models.ts';

/** Simulated ms. The peers' own settings are durations of the scenario's world, set on real timers ÷ timeScale. */
const DEADLINE_MS = 60_000;
const MODEL_RESET_INTERVAL_MS = 60_000;

/**
 * Peer B of issue 34, "ai-fallback": what a TypeScript team would build with the AI SDK alone. AI SDK 6
 * `generateText` with its default `maxRetries` (2; its backoff honours Retry-After) on one `ai-fallback`
 * `createFallback` model per chain (the chain's endpoints in order; `modelResetInterval` 60 s: back to the first
 * endpoint a minute after a switch), every turn inside one `p-limit` of the scenario's concurrency limit, every
 * upstream call with a 60 s deadline. Rounds, prompts and tools as the bare SDK baseline (`runAgentRounds`).
 *
 * ai-fallback, the AI SDK's retry and `p-limit` sleep and time on real timers (`Date.now`, `setTimeout`), so the
 * peer runs against `emu` at the scenario's timeScale; the durations configured here are the scenario's
 * (simulated) ones, divided by timeScale. The AI SDK's own backoff constants (2 s, ×2) stay as shipped, real.
 */
export async function runAiFallbackPeer(
  spec: ScenarioSpec,
  emu: BaselineEmulator,
): Promise<AgentRoundsResult> {
  const { scale, runtime, definitions, limit: tokens, historyTurns, maxTokens } = peerSetup(spec, emu);
  const models = new Map<string, LanguageModelV3>();
  const modelOf = (chain: string) => {
    let model = models.get(chain);
    if (!model) {
      model = createFallback({
        models: chainEndpoints(runtime, chain).map((e) =>
          withDeadline(endpointModel(e), DEADLINE_MS / scale),
        ),
        modelResetInterval: MODEL_RESET_INTERVAL_MS / scale,
      });
      models.set(chain, model);
    }
    return model;
  };
  const limit = pLimit(tokens);
  return runAgentRounds(spec, definitions, 'peer-b', (agent, key, prompt, memory) =>
    limit(() =>
      aiSdkTurn({
        agent,
        key,
        prompt,
        memory,
        historyTurns,
        maxTokens,
        model: modelOf(agent.chain),
        maxRetries: 2,
      }),
    ),
  );
}
