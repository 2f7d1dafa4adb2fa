import { fstatSync } from 'node:fs';
import { isatty } from 'node:tty';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import { parseByokCommand } from './byok-command.ts';
import type { ByokExpiryReason, ByokReceipt } from './byok-types.ts';

/**
 * `/byok PROVIDER KEY` typed while a run goes: reads lines from a terminal or a pipe, injects each key
 * through the runtime, and prints one line per command — never the typed line. On a terminal the
 * typing itself is hidden (raw mode), so the key never reaches the screen or its scrollback.
 */

/**
 * What the console needs from the runtime: `Supervisor['byok']` fits as it is.
 *
 * @example
 * ```ts
 * const target: ByokConsoleTarget = supervisor.byok;
 * ```
 */
export interface ByokConsoleTarget {
  inject(
    sessionId: string,
    provider: string,
    key: string,
    options?: { readonly signal?: AbortSignal },
  ): Promise<ByokReceipt>;
  /** Injections and expiries, so the console can say when a key went away. Optional. */
  subscribe?(listener: {
    onExpired?: (receipt: ByokReceipt, reason: ByokExpiryReason, faultKind?: string) => void;
  }): () => void;
}

/**
 * The input the console reads: `process.stdin`, or any readable stream (a test's PassThrough).
 *
 * @example
 * ```ts
 * const input: ByokConsoleInput = process.stdin;
 * ```
 */
export interface ByokConsoleInput {
  on(event: 'data', listener: (chunk: string | Buffer) => void): unknown;
  on(event: 'end' | 'close', listener: () => void): unknown;
  off(event: 'data', listener: (chunk: string | Buffer) => void): unknown;
  off(event: 'end' | 'close', listener: () => void): unknown;
  setEncoding?(encoding: BufferEncoding): unknown;
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
 * startByokConsole({ input: process.stdin, byok: supervisor.byok, print: (l) => live.message(l) });
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
}

/**
 * A running console.
 *
 * @example
 * ```ts
 * const console = startByokConsole({ input: process.stdin, byok, print });
 * try { await run(); } finally { console.stop(); }
 * ```
 */
export interface ByokConsole {
  /** Stops reading (the input no longer keeps the process alive), leaves raw mode, cancels checks in flight. Idempotent. */
  stop(): void;
  /** Resolves once every command read so far has been answered. */
  settled(): Promise<void>;
}

const MAX_LINE = 4096;

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
    case 'replaced':
      return undefined;
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
 * if (options.stdin !== false && canReadCommands(0)) startByokConsole({ input: process.stdin, byok, print });
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
 * or the refusal (`openai key sk-…dead refused: auth (401). Check the key and try again.`, an unknown
 * provider, a usage hint). It never prints, logs or keeps the typed line; on a terminal it reads in raw
 * mode so the typing is not shown either. Other lines are ignored with a note. A key that later expires
 * or is revoked (the provider refused it) is announced in one line too. Reading never blocks the run:
 * `stop()` (or `signal`) releases the input.
 *
 * @example
 * ```ts
 * const byokConsole = startByokConsole({
 *   input: process.stdin,
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
  const checks = new AbortController();
  const pending = new Set<Promise<void>>();
  let stopped = false;

  const say = (line: string) => {
    if (stopped) return;
    try {
      options.print(scrubSecrets(line).replace(/\s*\n\s*/g, ' '));
    } catch {
      // A closed output must not stop the run.
    }
  };

  const unsubscribe = byok?.subscribe?.({
    onExpired: (r, reason, faultKind) => {
      if (r.sessionId !== sessionId) return;
      const line = expiryLine(r, reason, faultKind);
      if (line) say(line);
    },
  });

  const handle = async (line: string): Promise<void> => {
    let command: ReturnType<typeof parseByokCommand>;
    try {
      command = parseByokCommand(line);
    } catch (e) {
      say((e as Error).message);
      return;
    }
    if (!command) {
      say('ignored a line that is not a /byok command (it is not shown); usage: /byok PROVIDER KEY');
      return;
    }
    if (!byok) {
      say(
        '/byok needs the breakwater policy; this run has no runtime to give the key to (the key was not kept)',
      );
      return;
    }
    try {
      const r = await byok.inject(sessionId, command.provider, command.key, { signal: checks.signal });
      say(`${r.provider} key ${r.masked} active for session ${r.sessionId}`);
    } catch (e) {
      // ByokRejectedError, ConfigError (unknown provider, BYOK off) and the vault's own errors are one
      // line that never holds the key; anything else is scrubbed all the same.
      say(e instanceof Error ? e.message : String(e));
    }
  };

  // One command at a time, so the answers come in the order the lines were typed.
  let queue: Promise<void> = Promise.resolve();
  const submit = (line: string) => {
    if (line.trim().length === 0) return;
    const job = queue.then(() => (stopped ? undefined : handle(line)));
    queue = job;
    pending.add(job);
    void job.finally(() => pending.delete(job));
  };

  // A small line editor: raw mode hands us keystrokes, a pipe hands us text; both end up here.
  const chars: string[] = [];
  let inEscape: 'none' | 'start' | 'csi' | 'ss3' = 'none';
  let lastWasCR = false;
  const onData = (chunk: string | Buffer) => {
    const text = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    for (const ch of text) {
      if (inEscape === 'start') {
        inEscape = ch === '[' ? 'csi' : ch === 'O' ? 'ss3' : 'none';
        continue;
      }
      if (inEscape === 'csi') {
        if (ch >= '@' && ch <= '~') inEscape = 'none';
        continue;
      }
      if (inEscape === 'ss3') {
        inEscape = 'none';
        continue;
      }
      if (ch === '\n' && lastWasCR) {
        lastWasCR = false;
        continue;
      }
      lastWasCR = ch === '\r';
      if (ch === '\r' || ch === '\n') {
        const line = chars.join('');
        chars.length = 0;
        submit(line);
      } else if (ch === '\u001b') inEscape = 'start';
      else if (ch === '\u0003' && raw) interrupt();
      else if (ch === '\u007f' || ch === '\b') chars.pop();
      else if (ch === '\u0015') chars.length = 0;
      else if (ch === '\t') chars.push(' ');
      else if (ch >= ' ' && chars.length < MAX_LINE) chars.push(ch);
    }
  };
  const onEnd = () => {
    if (chars.length > 0) {
      const line = chars.join('');
      chars.length = 0;
      submit(line);
    }
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

  input.setEncoding?.('utf8');
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
    chars.length = 0;
    checks.abort(new Error('the run ended'));
    unsubscribe?.();
    stopped = true;
  };
  options.signal?.addEventListener('abort', stop, { once: true });
  if (options.signal?.aborted) stop();

  return {
    stop,
    async settled() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
  };
}
