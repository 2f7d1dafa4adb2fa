import { createRequire } from 'node:module';
import type { DestinationStream, Logger, pino as Pino } from 'pino';
import { scrubSecrets, scrubValue } from '../redact/secret-scrubber.ts';

/** Field paths pino removes outright, whatever their value. */
export const REDACTED_PATHS: readonly string[] = Object.freeze([
  'apiKey',
  '*.apiKey',
  'key',
  '*.key',
  'authorization',
  '*.authorization',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers["x-goog-api-key"]',
]);

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** pino level. Default `process.env.BREAKWATER_LOG_LEVEL`, else `silent` (embedders opt in). */
  readonly level?: string;
  /** Where lines go. Default stdout. */
  readonly destination?: DestinationStream;
}

/**
 * A pino logger that cannot leak a key: known secret fields are redacted by path, and every other
 * value and message is passed through the secret scrubber (key shapes and every registered secret).
 *
 * @example
 * ```ts
 * const logger = createLogger({ level: 'info' });
 * logger.info({ agent: 'Kai', endpoint: 'primary' }, 'call');
 * ```
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const level = options.level ?? process.env.BREAKWATER_LOG_LEVEL ?? 'silent';
  return loadPino()(
    {
      level,
      base: undefined,
      redact: { paths: [...REDACTED_PATHS], censor: '[redacted]' },
      formatters: { log: (obj) => scrubValue(obj) },
      hooks: {
        logMethod(args, method) {
          const scrubbed = args.map((a) => (typeof a === 'string' ? scrubSecrets(a) : a)) as Parameters<
            typeof method
          >;
          method.apply(this, scrubbed);
        },
      },
    },
    options.destination,
  );
}

let pinoFactory: typeof Pino | undefined;

/**
 * pino, required when the first logger is made rather than imported with breakwater: it is a CommonJS package
 * (so `require` gives the very module an `import` would) and costs 30–80 ms to load, which a program importing
 * breakwater should not pay before it creates a supervisor.
 */
function loadPino(): typeof Pino {
  pinoFactory ??= (createRequire(import.meta.url)('pino') as { pino: typeof Pino }).pino;
  return pinoFactory;
}
