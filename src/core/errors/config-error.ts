/**
 * Bad input from a user (a config, a scenario file, an emulator profile). One clear message that
 * names the place (file, field path, line when known) and what to do.
 *
 * @example
 * ```ts
 * throw new ConfigError({ source: 'scenarios/x.yaml', path: 'agents[2].chain', message: 'names chain "gold", which is not defined; define it under chains:' });
 * ```
 */
export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID' as const;
  /** Where the input came from: a file path, or a label such as `defineConfig`. */
  readonly source: string;
  /** Field path inside the input, e.g. `faults[2].probability`. */
  readonly path: string;
  readonly line?: number;
  constructor(opts: { source: string; path: string; message: string; line?: number }) {
    const where = `${opts.source}${opts.line !== undefined ? `:${opts.line}` : ''}${opts.path ? ` at ${opts.path}` : ''}`;
    super(`${where}: ${opts.message}`);
    this.name = 'ConfigError';
    this.source = opts.source;
    this.path = opts.path;
    if (opts.line !== undefined) this.line = opts.line;
  }
}

/**
 * Type guard for {@link ConfigError}.
 *
 * @example
 * ```ts
 * try { createSupervisor(input); } catch (e) { if (isConfigError(e)) console.error(e.message); else throw e; }
 * ```
 */
export function isConfigError(e: unknown): e is ConfigError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'CONFIG_INVALID';
}
