/**
 * A command-line failure that is the user's to fix (a flag combination, a port in use, a database
 * that cannot be reached). Its message is one line that says what went wrong and what to do; the
 * CLI prints it as it is, without a stack trace.
 *
 * @example
 * ```ts
 * throw new CliError('give either --database-url or --data-dir, not both');
 * ```
 */
export class CliError extends Error {
  readonly code = 'CLI_ERROR' as const;
  /** Process exit code the CLI ends with. Default 1. */
  readonly exitCode: number;
  constructor(message: string, options: { exitCode?: number; cause?: unknown } = {}) {
    super(message, options.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = 'CliError';
    this.exitCode = options.exitCode ?? 1;
  }
}

/** Type guard for {@link CliError}. */
export function isCliError(e: unknown): e is CliError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'CLI_ERROR';
}
