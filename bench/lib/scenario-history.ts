import { createHash } from 'node:crypto';
import { AGENT_MACHINE_VERSION } from '../../machines/agent.machine.ts';
import { describeEndpoint, type ParsedEndpointConfig } from '../../src/engines/endpoint-config.ts';
import type { Engine, EngineResult } from '../../src/core/engine-types.ts';
import { roundPrompt } from '../../src/runs/round-prompt.ts';
import { toTurnInput } from '../../src/runs/round-runner.ts';
import { durableAgentState } from '../../src/runtime/agent-snapshot.ts';
import type { PeerAnswer } from '../../src/runs/round-prompt.ts';
import type { AgentDefinition } from '../../src/runtime/agent-definition.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { RuntimeConfigInput } from '../../src/runtime/runtime-config.ts';
import { loadScenario } from '../../src/scenarios/load-scenario.ts';
import { scenarioRuntimeConfig } from '../../src/scenarios/scenario-endpoints.ts';
import { scenarioAgents } from '../../src/scenarios/scenario-tools.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import type { AgentStateInput, TurnInput } from '../../src/store/store-types.ts';

/**
 * Realistic durable-state payloads for the durability benchmark, made by the real runtime: the agent8-storm
 * agents (roles, memory slots, tools) answer the scenario's round prompts (with the others' previous answers,
 * as the round runner builds them) from an in-memory engine whose answers are three sentences (~600 chars,
 * a "position in at most three sentences"). Turns and agent states are built exactly as `runRounds` commits them.
 */

const SENTENCES = [
  'Roll back the 09:00 release on the API tier first, because the latency regression started within two minutes of the deploy and the canary showed the same p99 shape.',
  'Page the payments lead now and move the webhook consumers to the standby cluster, then drain the dead-letter queue at a fixed rate so the provider does not throttle us again.',
  'Keep the status page honest: say checkout is degraded, give the next update time, and do not promise a fix time until the queue depth is back under the alert threshold.',
  'The money at risk is roughly 18k USD per hour of delayed settlement, so spending an extra 2k USD on the backup pool for the day is clearly worth it.',
  'Rotate the tenant key that created 40 keys in a minute, keep its existing sessions read-only, and open a security ticket with the audit log attached before anyone deletes anything.',
  'Shift the light agents onto Gemini and the local Llama for the rest of the incident, keep Claude for incident and analysis work, and cap each pool at its published RPM minus ten percent.',
  'Freeze deploys except for the rollback and the certificate renewal, and ask every team lead to confirm their on-call person is reachable before noon.',
  'Measure success by the checkout p99 under 800 ms for thirty minutes, the dead-letter queue under 100 messages, and zero new SSO assertion errors in the auth logs.',
];

/** Three sentences chosen by the key: ~500–650 characters, different per turn. */
export function answerText(key: string): string {
  const h = createHash('sha256').update(key).digest();
  return [0, 1, 2].map((i) => SENTENCES[h[i]! % SENTENCES.length]!).join(' ');
}

/** An engine that answers at once from memory with {@link answerText}; usage as a real call would report. */
export function scriptedEngine(config: ParsedEndpointConfig): Engine {
  const endpoint = describeEndpoint(config);
  return {
    endpoint,
    call: async (request) => {
      const text = answerText(request.idempotencyKey);
      const chars =
        (request.system?.length ?? 0) +
        request.messages.reduce((n, m) => n + ('content' in m ? m.content.length : 0), 0);
      const result: EngineResult = {
        text,
        toolCalls: [],
        stopReason: 'end_turn',
        usage: {
          inputTokens: Math.ceil(chars / 4),
          outputTokens: Math.ceil(text.length / 4),
          source: 'reported',
        },
        endpoint,
        model: config.model,
        requestId: `req_${request.idempotencyKey.length}`,
        rateLimit: {},
        latencyMs: 800,
      };
      return result;
    },
  };
}

/** The agent8-storm scenario with its endpoints resolved to a dead local URL (the engine is in memory). */
export function agent8Storm(): {
  spec: ScenarioSpec;
  runtime: RuntimeConfigInput;
  definitions: AgentDefinition[];
} {
  const spec = loadScenario('scenarios/agent8-storm');
  const runtime = scenarioRuntimeConfig(spec, { baseURL: () => 'http://127.0.0.1:9/v1' });
  const definitions = scenarioAgents({ ...spec, runtime } as ScenarioSpec);
  return { spec, runtime, definitions };
}

/** One committed round as `runRounds` builds it. */
export interface HistoryRound {
  readonly round: number;
  readonly turns: TurnInput[];
  readonly states: AgentStateInput[];
  /** Every endpoint's health at the end of the round, as the runner commits it. */
  readonly health: unknown;
}

/**
 * Runs the agent8-storm work (8 agents × 35 items × `rounds` rounds) through the real supervisor and agent
 * actors with the scripted engine, and returns each round's turns and end-of-round agent states.
 */
export async function buildAgent8History(rounds = 3): Promise<HistoryRound[]> {
  const { spec, runtime, definitions } = agent8Storm();
  const items = spec.rounds!.items;
  const supervisor = createSupervisor({ ...runtime, concurrency: { limit: 8 } } as RuntimeConfigInput, {
    createEngine: scriptedEngine,
  });
  const handles = definitions.map((d) => supervisor.spawnAgent(d));
  const out: HistoryRound[] = [];
  let previous = new Map<string, PeerAnswer[]>();
  for (let round = 1; round <= rounds; round++) {
    const current = new Map<string, PeerAnswer[]>();
    const turns: TurnInput[] = [];
    const order = new Map<string, number>();
    for (const item of items) {
      const results = await Promise.all(
        handles.map(async (h) => {
          const key = `bench-history:${round}:${item.id}:${h.name}`;
          const peers = (previous.get(item.id) ?? []).filter((p) => p.agent !== h.name);
          const turn = await h.ask(roundPrompt(item, round, rounds, peers), { turnId: key, key });
          return { key, turn };
        }),
      );
      for (const { key, turn } of results) {
        const agentOrder = order.get(turn.agent) ?? 0;
        order.set(turn.agent, agentOrder + 1);
        turns.push({ ...toTurnInput(item.id, key, turn), agentOrder });
        const list = current.get(item.id) ?? [];
        list.push({ agent: turn.agent, answer: turn.answer.text });
        current.set(item.id, list);
      }
    }
    // Exactly what the round runner commits.
    const states: AgentStateInput[] = handles.map((h) => ({
      agent: h.name,
      machineVersion: AGENT_MACHINE_VERSION,
      ...durableAgentState(h.persistedSnapshot()),
    }));
    const health = supervisor.durable.exportHealth();
    out.push({
      round,
      turns,
      states: JSON.parse(JSON.stringify(states)),
      health: JSON.parse(JSON.stringify(health)),
    });
    previous = current;
  }
  await supervisor.stop();
  return out;
}
