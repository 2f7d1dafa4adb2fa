/**
 * The arguments a model gave a tool do not match the tool's schema. The tool did not run; the message goes back
 * to the model as the tool's error result (it can correct itself on the next step), naming each bad field.
 *
 * @example
 * ```ts
 * const e = new ToolArgumentsError('quote', ['at ticker: expected string, received number']);
 * e.message; // 'arguments of tool "quote" do not match its schema: at ticker: expected string, received number'
 * ```
 */
export class ToolArgumentsError extends Error {
  readonly code = 'TOOL_ARGUMENTS_INVALID' as const;
  readonly tool: string;
  /** One line per failed check: where (`at a.b`) and what is wrong. */
  readonly issues: readonly string[];
  constructor(tool: string, issues: readonly string[]) {
    super(`arguments of tool "${tool}" do not match its schema: ${issues.join('; ')}`);
    this.name = 'ToolArgumentsError';
    this.tool = tool;
    this.issues = issues;
  }
}

/**
 * Type guard for {@link ToolArgumentsError}.
 *
 * @example
 * ```ts
 * if (isToolArgumentsError(e)) console.log(e.issues);
 * ```
 */
export function isToolArgumentsError(e: unknown): e is ToolArgumentsError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'TOOL_ARGUMENTS_INVALID';
}
