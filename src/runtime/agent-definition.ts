import type { JsonSchema } from '../core/engine-types.ts';
import type { DegradedAnswer } from '../core/turn.ts';

/**
 * What a tool implementation gets besides its arguments.
 *
 * @example
 * ```ts
 * run: async (args, { signal, idempotencyKey }) => fetch(url, { signal, headers: { 'Idempotency-Key': idempotencyKey } })
 * ```
 */
export interface ToolRunContext {
  /** Aborts when the turn is cancelled or the agent stops. */
  readonly signal: AbortSignal;
  readonly agent: string;
  /** Stable key of this tool call (memoized by the durable store: a committed result is not run again). */
  readonly idempotencyKey: string;
  /** The name the model called the tool by (the key in `tools`). Absent when a program runs the tool itself. */
  readonly toolName?: string;
}

/**
 * A tool an agent offers its model. {@link defineTool} makes one from a zod schema, typed.
 *
 * @example
 * ```ts
 * const clock: AgentTool = {
 *   description: 'The time now, ISO 8601',
 *   parameters: { type: 'object', properties: {} },
 *   run: async () => new Date().toISOString(),
 * };
 * ```
 */
export interface AgentTool {
  readonly description?: string;
  /** JSON Schema of the arguments object. */
  readonly parameters: JsonSchema;
  /**
   * Runs the tool. The returned value is sent back to the model as JSON (strings as they are); a thrown error goes
   * back to the model as a tool error.
   */
  run(args: Readonly<Record<string, unknown>>, context: ToolRunContext): Promise<unknown>;
}

/**
 * A tool the caller runs itself: offered to the model like any tool, but a model asking for it ends the turn with
 * its calls in `turn.toolCalls`, for the caller to run and answer in its next call (how the AI SDK provider hands
 * tool calls to `generateText`).
 *
 * @example
 * ```ts
 * const lookup: ClientTool = { description: 'Look a ticker up', parameters: { type: 'object', properties: { ticker: { type: 'string' } } } };
 * ```
 */
export interface ClientTool {
  readonly description?: string;
  /** JSON Schema of the arguments object. */
  readonly parameters: JsonSchema;
  readonly run?: undefined;
}

/**
 * The context a decision tree sees when the agent must answer without an engine.
 *
 * @example
 * ```ts
 * decisionTree: (c: DegradedContext) => ({ summary: `No live answer (${c.reason})`, source: 'decision_tree', reason: c.reason })
 * ```
 */
export interface DegradedContext {
  readonly agent: string;
  readonly prompt: string;
  readonly memory: Readonly<Record<string, string>>;
  readonly reason: string;
}

/**
 * An LLM agent. It runs as an XState actor through idle → queued → calling/fallback → cooling →
 * degraded and never halts on an upstream fault.
 *
 * @example
 * ```ts
 * const analyst = defineAgent({
 *   name: 'analyst-macro',
 *   role: 'You are a macro analyst. Answer in three bullet points.',
 *   tier: 'analysis',
 *   chain: 'premium',
 *   memory: { focus: 'rates and FX' },
 * });
 * ```
 */
export interface LlmAgentDefinition {
  /** Unique name in the runtime. */
  readonly name: string;
  /** System prompt: who the agent is. Default: none. */
  readonly role?: string;
  /** Priority tier (must be one of the config's `tiers`). Default: the last (lowest) tier. */
  readonly tier?: string;
  /** Name of the engine chain it calls (must be one of the config's `chains`). */
  readonly chain: string;
  /**
   * The user session it works for: only BYOK keys injected for this session (`supervisor.byok.inject(session, …)`)
   * are tried after its chain, never another session's. Default `'default'` (the session `/byok` on stdin uses).
   */
  readonly session?: string;
  /** Initial memory slots, rendered into the system prompt. Default: none. */
  readonly memory?: Readonly<Record<string, string>>;
  /** Tools the model may call: run by breakwater ({@link AgentTool}) or by the caller ({@link ClientTool}). Default: none. */
  readonly tools?: Readonly<Record<string, AgentTool | ClientTool>>;
  /** Structured answer when no engine can answer and the answer cache has nothing close. Default: a summary of memory and prompt. */
  readonly decisionTree?: (context: DegradedContext) => DegradedAnswer;
  /** Overrides of the config's `agentDefaults`. */
  readonly maxWaitMs?: number;
  readonly maxAttempts?: number;
  readonly maxTokens?: number;
  readonly temperature?: number;
  readonly historyTurns?: number;
}

/**
 * Work that needs no LLM (seed 000's `no_agent=True`: e.g. telegram-outbox-flusher). It runs as
 * plain code, takes no concurrency token and never calls an engine.
 *
 * @example
 * ```ts
 * const flusher = defineAgent({ name: 'telegram-outbox-flusher', noAgent: true, run: async () => flushOutbox() });
 * ```
 */
export interface NoAgentDefinition {
  readonly name: string;
  readonly noAgent: true;
  readonly tier?: string;
  run(input: string, context: { readonly signal: AbortSignal }): Promise<unknown>;
}

/**
 * Either kind of agent.
 *
 * @example
 * ```ts
 * const agents: AgentDefinition[] = [{ name: 'Kai', chain: 'premium' }, { name: 'flusher', noAgent: true, run: flush }];
 * ```
 */
export type AgentDefinition = LlmAgentDefinition | NoAgentDefinition;

/** True for plain-code work. */
export function isNoAgentDefinition(def: AgentDefinition): def is NoAgentDefinition {
  return (def as NoAgentDefinition).noAgent === true;
}

/**
 * Identity helper that gives an agent definition its type (and its editor help).
 *
 * @example
 * ```ts
 * const analyst = defineAgent({ name: 'analyst', chain: 'premium', tier: 'analysis', role: 'You are a macro analyst.' });
 * supervisor.spawnAgent(analyst);
 * ```
 */
export function defineAgent<const D extends AgentDefinition>(definition: D): D {
  return definition;
}

/** Every field an LLM agent's definition may have (the `satisfies` keeps it in step with the interface). */
const LLM_AGENT_FIELDS = {
  name: true,
  role: true,
  tier: true,
  chain: true,
  session: true,
  memory: true,
  tools: true,
  decisionTree: true,
  maxWaitMs: true,
  maxAttempts: true,
  maxTokens: true,
  temperature: true,
  historyTurns: true,
} as const satisfies Record<keyof LlmAgentDefinition, true>;

/** Every field a no-agent definition may have. */
const NO_AGENT_FIELDS = { name: true, noAgent: true, tier: true, run: true } as const satisfies Record<
  keyof NoAgentDefinition,
  true
>;

/** What belongs in `spawnAgent`'s second argument, not the definition: said when one is put in the definition. */
const SPAWN_OPTION_FIELDS = new Set(['snapshot']);

/**
 * The first field of `definition` that no agent definition has, with what to do about it; `undefined` when all are
 * known. A misspelt or misplaced field would otherwise be ignored without a word (a `snapshot` put in the definition
 * instead of the options restored nothing).
 */
export function unknownAgentField(definition: AgentDefinition): { field: string; hint: string } | undefined {
  const known: Readonly<Record<string, true>> = isNoAgentDefinition(definition)
    ? NO_AGENT_FIELDS
    : LLM_AGENT_FIELDS;
  for (const field of Object.keys(definition)) {
    if (Object.hasOwn(known, field)) continue;
    const hint = SPAWN_OPTION_FIELDS.has(field)
      ? `"${field}" goes in spawnAgent's second argument: spawnAgent(definition, { ${field} })`
      : `not a field of an agent definition; the fields are ${Object.keys(known).join(', ')}`;
    return { field, hint };
  }
  return undefined;
}
