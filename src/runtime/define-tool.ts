import { z } from 'zod';
import type { JsonSchema } from '../core/engine-types.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { ToolArgumentsError } from '../core/errors/tool-arguments-error.ts';
import type { AgentTool, ToolRunContext } from './agent-definition.ts';

/**
 * What {@link defineTool} takes: a zod object schema for the arguments, and the code that runs the tool.
 *
 * @example
 * ```ts
 * const spec: ToolSpec<typeof schema> = { parameters: schema, run: async (args) => lookup(args.ticker) };
 * ```
 */
export interface ToolSpec<S extends z.ZodType> {
  /** What the tool does, for the model. Default: none. */
  readonly description?: string;
  /** The arguments as a zod schema (an object). Its JSON Schema is what the model sees. */
  readonly parameters: S;
  /**
   * Runs the tool with the arguments already checked against `parameters` (defaults applied, transforms run).
   * The returned value goes back to the model as JSON (strings as they are); a thrown error as a tool error.
   */
  run(args: z.output<S>, context: ToolRunContext): Promise<unknown> | unknown;
}

/**
 * A tool made by {@link defineTool}: an {@link AgentTool} that also carries its zod schema.
 *
 * @example
 * ```ts
 * const quote: TypedTool<typeof schema> = defineTool({ parameters: schema, run: async ({ ticker }) => lookup(ticker) });
 * quote.parameters; // the JSON Schema the model sees
 * ```
 */
export interface TypedTool<S extends z.ZodType> extends AgentTool {
  /** The schema `run`'s arguments are checked against. */
  readonly schema: S;
}

/**
 * Defines a tool from a zod schema: the JSON Schema sent upstream is generated from it, `run`'s arguments are
 * typed by it, and arguments that fail it never reach `run` — the model gets a tool error naming each bad field
 * ({@link ToolArgumentsError}) and may try again.
 *
 * @example
 * ```ts
 * import { z } from 'zod';
 * const quote = defineTool({
 *   description: 'Latest price of a currency pair',
 *   parameters: z.object({ pair: z.enum(['EURUSD', 'USDJPY']), precision: z.number().int().default(4) }),
 *   run: async ({ pair, precision }) => ({ pair, price: Number((1.0842).toFixed(precision)) }),
 * });
 * supervisor.spawnAgent({ name: 'fx', chain: 'premium', tools: { quote } });
 * ```
 */
export function defineTool<S extends z.ZodType>(spec: ToolSpec<S>): TypedTool<S> {
  const parameters = jsonSchemaOf(spec.parameters);
  const schema = spec.parameters;
  return Object.freeze({
    ...(spec.description !== undefined ? { description: spec.description } : {}),
    parameters,
    schema,
    async run(args: Readonly<Record<string, unknown>>, context: ToolRunContext): Promise<unknown> {
      const parsed = await schema.safeParseAsync(args);
      if (!parsed.success) throw new ToolArgumentsError(context.toolName ?? 'tool', issuesOf(parsed.error));
      return spec.run(parsed.data, context);
    },
  });
}

/**
 * The JSON Schema of the tool's arguments as the model must write them (zod's input side: a field with a default
 * is optional). `$schema` is left out: some providers refuse keys they do not know.
 */
function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  let json: Record<string, unknown>;
  try {
    json = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
  } catch (e) {
    throw new ConfigError({
      source: 'defineTool',
      path: 'parameters',
      message: `cannot be written as JSON Schema (${e instanceof Error ? e.message : String(e)}); use plain zod types`,
    });
  }
  if (json.type !== 'object')
    throw new ConfigError({
      source: 'defineTool',
      path: 'parameters',
      message: 'must be an object schema (z.object({...})): a tool takes named arguments',
    });
  const { $schema: _, ...rest } = json;
  return rest;
}

function issuesOf(error: z.ZodError): string[] {
  return error.issues.map((i) => (i.path.length > 0 ? `at ${i.path.join('.')}: ${i.message}` : i.message));
}
