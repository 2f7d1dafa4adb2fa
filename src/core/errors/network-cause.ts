import { ConfigError } from './config-error.ts';
import { redactUrl } from '../../redact/secret-scrubber.ts';

/**
 * What a failed network call met, in a few words: fetch says only "fetch failed" and keeps the reason in
 * `cause` (an errno such as ECONNREFUSED, or a timeout). Never the URL or anything the server sent.
 *
 * @example
 * ```ts
 * try { await fetch(url); } catch (e) { networkCause(e); } // 'the connection was refused'
 * ```
 */
export function networkCause(e: unknown): string {
  const err = e as {
    name?: string;
    code?: string;
    cause?: { code?: string; name?: string; message?: string };
  };
  if (err?.name === 'TimeoutError' || err?.cause?.name === 'TimeoutError') return 'no answer in time';
  if (err?.name === 'AbortError') return 'the call was cancelled';
  const code = err?.cause?.code ?? err?.code;
  switch (code) {
    case 'ECONNREFUSED':
      return 'the connection was refused: nothing listens there';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'the host name does not resolve';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'the connection was closed without an answer';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'the host cannot be reached';
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'ETIMEDOUT':
      return 'no answer in time';
    default:
      if (code) return `the call failed: ${code}`;
      // undici's own refusals ("bad port") are short fixed words, never the URL.
      return err?.cause?.message && /^[a-z ]{1,40}$/i.test(err.cause.message)
        ? `the call failed: ${err.cause.message}`
        : 'the call failed';
  }
}

/**
 * The one line for an `--emulator-url` nothing usable answers at: the URL (without credentials or query),
 * what was met, and what to do.
 *
 * @example
 * ```ts
 * throw unreachableEmulator('http://127.0.0.1:4000', err);
 * // --emulator-url: nothing answered at http://127.0.0.1:4000/ (the connection was refused …); start …
 * ```
 */
export function unreachableEmulator(url: string, e: unknown): ConfigError {
  return new ConfigError({
    source: '--emulator-url',
    path: '',
    message: `no emulator answered at ${redactUrl(url)} (${networkCause(e)}); start one with \`breakwater emulator\` and give its control URL, or leave --emulator-url out to use the built-in emulator`,
  });
}
