import type { AgentSettings } from '../../machines/agent.machine.ts';
import type { LlmAgentDefinition } from './agent-definition.ts';
import { MAX_REMEMBERED_TOOL_RESULTS } from './prompt-builder.ts';
import type { RuntimeConfig } from './runtime-config.ts';

/** The agent machine's settings from a definition and the config's defaults. */
export function agentSettings(
  definition: LlmAgentDefinition,
  tier: string,
  config: RuntimeConfig,
): AgentSettings {
  const d = config.agentDefaults;
  return {
    name: definition.name,
    tier,
    chain: definition.chain,
    ...(definition.role ? { role: definition.role } : {}),
    maxWaitMs: definition.maxWaitMs ?? d.maxWaitMs,
    maxAttempts: definition.maxAttempts ?? d.maxAttempts,
    maxTokens: definition.maxTokens ?? d.maxTokens,
    ...(definition.temperature !== undefined ? { temperature: definition.temperature } : {}),
    historyTurns: definition.historyTurns ?? d.historyTurns,
    toolResultsKept: MAX_REMEMBERED_TOOL_RESULTS,
    probeIntervalMs: d.probeIntervalMs,
    tools: Object.entries(definition.tools ?? {}).map(([name, t]) => ({
      name,
      ...(t.description ? { description: t.description } : {}),
      parameters: t.parameters,
    })),
    ...clientToolsOf(definition),
  };
}

/** The names of the tools without `run` (the caller runs them), as the machine's settings want them. */
function clientToolsOf(definition: LlmAgentDefinition): { clientTools?: readonly string[] } {
  const names = Object.entries(definition.tools ?? {})
    .filter(([, t]) => typeof t.run !== 'function')
    .map(([name]) => name);
  return names.length > 0 ? { clientTools: names } : {};
}
