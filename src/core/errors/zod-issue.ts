import type { z } from 'zod';
import { scrubSecrets } from '../../redact/secret-scrubber.ts';
import { ConfigError } from './config-error.ts';

/**
 * Turns the first issue of a failed zod parse into one {@link ConfigError} that names the source,
 * the field path (`agents[2].chain`) and what is wrong.
 */
export function configErrorFromZod(error: z.ZodError, source: string): ConfigError {
  const issue = error.issues[0];
  const path = (issue?.path ?? [])
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
    .join('');
  return new ConfigError({ source, path, message: scrubSecrets(issue?.message ?? 'invalid value') });
}
