import { scrubSecrets } from '../redact/secret-scrubber.ts';
import { CoordinationUnavailableError } from './coordination-errors.ts';

/**
 * The one error of a `postgres` coordination backend that cannot reach its server (`what`: the step of connect(),
 * or `lost`), with the tries made when a cut was ridden out; the server's text with any secret scrubbed.
 */
export function unavailableError(
  location: string,
  e: unknown,
  what: string,
  tries: { attempts?: number; elapsedMs?: number } = {},
): CoordinationUnavailableError {
  const text = e instanceof Error ? e.message : String(e);
  const code = (e as { code?: unknown } | null)?.code;
  const problem =
    code === 'ECONNREFUSED'
      ? 'connection refused (is the server running, on that port?)'
      : scrubSecrets(text.replace(/\s+/g, ' ').trim()) || 'connection failed';
  const after =
    tries.attempts !== undefined && tries.attempts > 1
      ? `, after ${tries.attempts} attempts over ${((tries.elapsedMs ?? 0) / 1000).toFixed(1)} s`
      : '';
  return new CoordinationUnavailableError(
    `coordination.url: ${location} is unreachable (${what}: ${problem}${after}); not sending (fail closed)`,
    { cause: e },
  );
}

/** The error of a step of connect(), marked with the step (the one message says which failed). */
export function withStep(e: unknown, step: string): Error {
  return Object.assign(e instanceof Error ? e : new Error(String(e)), { step });
}

/** Which step of connect() an error came from (set by connectOnce and the LISTEN connection). */
export function connectStep(e: unknown): string {
  const step = (e as { step?: unknown } | null)?.step;
  return typeof step === 'string' ? step : 'could not connect';
}

export function isUnavailableText(e: unknown): boolean {
  return e instanceof Error && /Connection terminated|timeout|ECONN|closed|ended/i.test(e.message);
}
