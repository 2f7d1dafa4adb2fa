import { fstatSync } from 'node:fs';
import { isatty } from 'node:tty';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import type { ByokExpiryReason, ByokReceipt } from './byok-types.ts';
import { KeySealer } from '../redact/sealed-key.ts';
import { type ByokConsoleTarget, createCommandQueue } from './byok-command-queue.ts';
import { createLineEditor } from './byok-line-editor.ts';

export type { ByokConsoleTarget } from './byok-command-queue.ts';

/**
 * `/byok PROVIDER KEY` typed while a run goes: reads bytes from a terminal or a pipe, injects each key
 * through the runtime, and prints one line per command — never the typed line. The key never becomes a
 * string: lines are edited and parsed as bytes in a buffer that is wiped once parsed, a command waiting
 * for its turn holds its key sealed, and the bytes read are wiped once handled. On a terminal the typing
 * itself is hidden (raw mode), so the key never reaches the screen or its scrollback.
 */

/**
 * The input the console reads: `openCommandInput(0)` (what the CLI uses), `process.stdin`, or any
 * readable stream (a test's PassThrough). Chunks should be Buffers: the console wipes each one once it
 * handled it (a string chunk cannot be wiped).
 *
 * @example
 * ```ts
 * const input: ByokConsoleInput = openCommandInput(0);
 * ```
 */
export interface ByokConsoleInput {
  on(event: 'data', listener: (chunk: string | Buffer) => void): unknown;
  on(event: 'end' | 'close', listener: () => void): unknown;
  off(event: 'data', listener: (chunk: string | Buffer) => void): unknown;
  off(event: 'end' | 'close', listener: () => void): unknown;
  resume?(): unknown;
  pause?(): unknown;
  unref?(): unknown;
  readonly isTTY?: boolean;
  setRawMode?(mode: boolean): unknown;
}

/**
 * Options of {@link startByokConsole}.
 *
 * @example
 * ```ts
 * startByokConsole({ input: openCommandInput(0), byok: supervisor.byok, print: (l) => live.message(l) });
 * ```
 */
export interface ByokConsoleOptions {
  /** Where lines come from. Required. */
  readonly input: ByokConsoleInput;
  /**
   * The runtime's BYOK (`supervisor.byok`). Undefined when the run's policy has none (status-quo): a
   * `/byok` line is then answered with a one-line explanation.
   */
  readonly byok: ByokConsoleTarget | undefined;
  /** Prints one line for the user. Required. It never receives the typed line. */
  readonly print: (line: string) => void;
  /** Session the keys are injected for. Default `'default'`. */
  readonly sessionId?: string;
  /**
   * Hide the typing: raw mode on a terminal (Ctrl+C still stops the run, Backspace and Ctrl+U edit).
   * Default: `input.isTTY === true`.
   */
  readonly raw?: boolean;
  /** What Ctrl+C does in raw mode. Default: sends SIGINT to this process (the run stops as usual). */
  readonly onInterrupt?: () => void;
  /** Stops the console (same as `stop()`) and cancels the key checks in flight. Default none. */
  readonly signal?: AbortSignal;
  /**
   * Commands that may wait while one is checked. When more arrive, the oldest waiting ones are dropped
   * (their keys wiped) and the console says how many, so a flood of lines cannot grow memory or bury a
   * key typed after it. Default 8.
   */
  readonly maxWaiting?: number;
}

/**
 * A running console.
 *
 * @example
 * ```ts
 * const console = startByokConsole({ input: openCommandInput(0), byok, print });
 * try { await run(); } finally { console.stop(); }
 * ```
 */
export interface ByokConsole {
  /** Stops reading (the input no longer keeps the process alive), leaves raw mode, cancels checks in flight. Idempotent. */
  stop(): void;
  /** Resolves once every command read so far has been answered (or dropped). */
  settled(): Promise<void>;
}

function expiryLine(r: ByokReceipt, reason: ByokExpiryReason, faultKind?: string): string | undefined {
  const who = `${r.provider} key ${r.masked} for session ${r.sessionId}`;
  switch (reason) {
    case 'idle':
      return `${who} expired (not used for its idle time); type /byok ${r.provider} KEY to add it again`;
    case 'revoked':
      return faultKind
        ? `${who} removed: the provider refused it (${faultKind}); type /byok ${r.provider} KEY with another key`
        : `${who} revoked`;
    case 'session-ended':
      return `${who} removed: the session ended`;
    default:
      return undefined;
  }
}

/**
 * True when `fd` is a terminal, a pipe or a socket: an input someone may type or write `/byok` lines
 * into. A regular file, `/dev/null` (what `stdio: 'ignore'` gives) or a closed descriptor is not. It
 * looks at the descriptor only, so `process.stdin` is not even created when the answer is no.
 *
 * @example
 * ```ts
 * if (options.stdin !== false && canReadCommands(0)) startByokConsole({ input: openCommandInput(0), byok, print });
 * ```
 */
export function canReadCommands(fd = 0): boolean {
  try {
    if (isatty(fd)) return true;
    const stat = fstatSync(fd);
    return stat.isFIFO() || stat.isSocket();
  } catch {
    return false;
  }
}

/**
 * Reads `/byok PROVIDER KEY` lines from `input` while a run goes and injects each key through `byok`
 * for one session. For each command it prints ONE line: `openai key sk-…a1b2 active for session default`,
 * or the refusal (`openai key sk-…dead refused: auth (401). Check the key and try again.`, a key of the
 * wrong format, an unknown provider, a usage hint). It never prints, logs or keeps the typed line; on a
 * terminal it reads in raw mode so the typing is not shown either. A line with a control character is
 * refused whole (a key is never silently altered). At most `maxWaiting` commands wait; beyond that the
 * oldest are dropped and the console says so. Other lines are ignored with a note. A key that later
 * expires or is revoked (the provider refused it) is announced in one line too. Reading never blocks the
 * run: `stop()` (or `signal`) releases the input.
 *
 * @example
 * ```ts
 * const byokConsole = startByokConsole({
 *   input: openCommandInput(0),
 *   byok: supervisor.byok,
 *   print: (line) => process.stdout.write(`${line}\n`),
 * });
 * // … the run …
 * byokConsole.stop();
 * ```
 */
export function startByokConsole(options: ByokConsoleOptions): ByokConsole {
  const { input, byok } = options;
  const sessionId = options.sessionId ?? 'default';
  const raw = options.raw ?? input.isTTY === true;
  const interrupt = options.onInterrupt ?? (() => process.kill(process.pid, 'SIGINT'));
  const maxWaiting = Math.max(1, Math.floor(options.maxWaiting ?? 8));
  const checks = new AbortController();
  // Waiting commands hold their key sealed under a key of the console's own, not in plaintext.
  const sealer = new KeySealer();
  let stopped = false;

  const say = (line: string) => {
    if (stopped) return;
    try {
      options.print(scrubSecrets(line).replace(/\s*\n\s*/g, ' '));
    } catch {
      // A closed output must not stop the run.
    }
  };

  const queue = createCommandQueue({
    byok,
    sessionId,
    maxWaiting,
    sealer,
    checks: checks.signal,
    say,
    isStopped: () => stopped,
  });

  const unsubscribe = byok?.subscribe?.({
    onExpired: (r, reason, faultKind) => {
      if (r.sessionId !== sessionId) return;
      const line = expiryLine(r, reason, faultKind);
      if (line) say(line);
    },
  });

  const editor = createLineEditor({ raw, interrupt, say, submit: queue.submit });
  const onData = editor.feed;
  const onEnd = () => {
    editor.finish();
    release();
  };

  const restoreTerminal = () => {
    if (raw) input.setRawMode?.(false);
  };
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    input.off('data', onData);
    input.off('end', onEnd);
    input.off('close', onEnd);
    restoreTerminal();
    process.off('exit', restoreTerminal);
    input.pause?.();
    // A paused terminal or pipe must not keep the process alive once the run is over.
    input.unref?.();
  };

  if (raw) {
    input.setRawMode?.(true);
    process.once('exit', restoreTerminal);
  }
  input.on('data', onData);
  input.on('end', onEnd);
  input.on('close', onEnd);
  input.resume?.();

  const stop = () => {
    if (stopped) return;
    release();
    editor.wipe();
    checks.abort(new Error('the run ended'));
    unsubscribe?.();
    stopped = true;
    queue.discardAll();
  };
  options.signal?.addEventListener('abort', stop, { once: true });
  if (options.signal?.aborted) stop();

  return { stop, settled: queue.settled };
}
