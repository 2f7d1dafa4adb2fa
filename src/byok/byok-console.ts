import { fstatSync } from 'node:fs';
import { isatty } from 'node:tty';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import { parseByokLine } from './byok-command.ts';
import type { ByokExpiryReason, ByokReceipt } from './byok-types.ts';
import { KeySealer, keyBuffer, type SealedKey } from '../redact/sealed-key.ts';

/**
 * `/byok PROVIDER KEY` typed while a run goes: reads bytes from a terminal or a pipe, injects each key
 * through the runtime, and prints one line per command — never the typed line. The key never becomes a
 * string: lines are edited and parsed as bytes in a buffer that is wiped once parsed, a command waiting
 * for its turn holds its key sealed, and the bytes read are wiped once handled. On a terminal the typing
 * itself is hidden (raw mode), so the key never reaches the screen or its scrollback.
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
  /** Takes the key as bytes; the console wipes them once the returned promise settled. */
  inject(
    sessionId: string,
    provider: string,
    key: string | Uint8Array,
    options?: { readonly signal?: AbortSignal },
  ): Promise<ByokReceipt>;
  /** Injections and expiries, so the console can say when a key went away. Optional. */
  subscribe?(listener: {
    onExpired?: (receipt: ByokReceipt, reason: ByokExpiryReason, faultKind?: string) => void;
  }): () => void;
}

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

/** Longest line kept, in bytes; a longer one is refused whole. */
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

/** A command waiting for its turn (its key sealed), or a line of answer kept in typing order. */
type Waiting =
  | { readonly kind: 'inject'; readonly provider: string; readonly sealed: SealedKey; readonly aad: string }
  | { readonly kind: 'say'; readonly line: string }
  | { readonly kind: 'ignored'; count: number };

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
  const waiting: Waiting[] = [];
  let working: Promise<void> | undefined;
  let stopped = false;
  let serial = 0;

  const say = (line: string) => {
    if (stopped) return;
    try {
      options.print(scrubSecrets(line).replace(/\s*\n\s*/g, ' '));
    } catch {
      // A closed output must not stop the run.
    }
  };

  // Dropped lines are reported once per burst, not once per line.
  let dropped = 0;
  let reportScheduled = false;
  const reportDrops = () => {
    reportScheduled = false;
    if (dropped > 0) {
      say(
        `dropped ${dropped} waiting /byok ${dropped === 1 ? 'line' : 'lines'} (their keys were not kept): at most ${maxWaiting} wait while a key is checked, the newest are kept; type a dropped key again if you need it`,
      );
    }
    dropped = 0;
  };

  const unsubscribe = byok?.subscribe?.({
    onExpired: (r, reason, faultKind) => {
      if (r.sessionId !== sessionId) return;
      const line = expiryLine(r, reason, faultKind);
      if (line) say(line);
    },
  });

  const handle = async (job: Waiting): Promise<void> => {
    if (job.kind === 'say') return say(job.line);
    if (job.kind === 'ignored') {
      return say(
        job.count === 1
          ? 'ignored a line that is not a /byok command (it is not shown); usage: /byok PROVIDER KEY'
          : `ignored ${job.count} lines that are not /byok commands (they are not shown); usage: /byok PROVIDER KEY`,
      );
    }
    if (!byok) {
      sealer.wipe(job.sealed);
      say(
        '/byok needs the breakwater policy; this run has no runtime to give the key to (the key was not kept)',
      );
      return;
    }
    try {
      const r = await sealer.open(job.sealed, job.aad, (key) =>
        byok.inject(sessionId, job.provider, key, { signal: checks.signal }),
      );
      say(`${r.provider} key ${r.masked} active for session ${r.sessionId}`);
    } catch (e) {
      // ByokRejectedError, ConfigError (format, unknown provider, BYOK off) and the vault's own errors are
      // one line that never holds the key; anything else is sanitized all the same.
      say(e instanceof Error ? e.message : String(e));
    } finally {
      sealer.wipe(job.sealed);
    }
  };

  const work = async (): Promise<void> => {
    for (let job = waiting.shift(); job; job = waiting.shift()) {
      if (stopped) discard(job);
      else await handle(job);
    }
    working = undefined;
  };

  const discard = (job: Waiting) => {
    if (job.kind === 'inject') sealer.wipe(job.sealed);
  };

  // Every answer goes through one queue, so answers come in the order the lines were typed.
  const enqueue = (job: Waiting) => {
    const last = waiting[waiting.length - 1];
    if (job.kind === 'ignored' && last?.kind === 'ignored') last.count++;
    else waiting.push(job);
    while (waiting.length > maxWaiting) {
      discard(waiting.shift()!);
      dropped++;
      if (!reportScheduled) {
        reportScheduled = true;
        setImmediate(reportDrops);
      }
    }
    working ??= work();
  };

  const submit = (line: Buffer) => {
    try {
      const command = parseByokLine(line);
      if (command) {
        const aad = `byok-console:${++serial}`;
        enqueue({ kind: 'inject', provider: command.provider, aad, sealed: sealer.seal(command.key, aad) });
      } else if (line.some((b) => b !== 0x20 && b !== 0x09)) enqueue({ kind: 'ignored', count: 1 });
    } catch (e) {
      enqueue({ kind: 'say', line: (e as Error).message });
    }
  };

  // A small line editor over bytes: raw mode hands us keystrokes, a pipe hands us text; both end up in
  // one off-heap line buffer that is wiped after every line.
  const line = keyBuffer(MAX_LINE);
  let length = 0;
  let overflow = false;
  let inEscape: 'none' | 'start' | 'csi' | 'ss3' = 'none';
  let lastWasCR = false;
  const endLine = () => {
    if (overflow) say(`refused a line longer than ${MAX_LINE} bytes (it was not kept); paste the key alone`);
    else submit(line.subarray(0, length));
    line.fill(0, 0, Math.min(MAX_LINE, length));
    length = 0;
    overflow = false;
  };
  const append = (b: number) => {
    if (length < MAX_LINE) line[length++] = b;
    else overflow = true;
  };
  const onData = (chunk: string | Buffer) => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    try {
      for (const b of bytes) {
        if (raw && inEscape !== 'none') {
          if (inEscape === 'start') inEscape = b === 0x5b ? 'csi' : b === 0x4f ? 'ss3' : 'none';
          else if (inEscape === 'csi') {
            if (b >= 0x40 && b <= 0x7e) inEscape = 'none';
          } else inEscape = 'none';
          continue;
        }
        if (b === 0x0a && lastWasCR) {
          lastWasCR = false;
          continue;
        }
        lastWasCR = b === 0x0d;
        if (b === 0x0d || b === 0x0a) endLine();
        else if (raw && b === 0x1b) inEscape = 'start';
        else if (raw && b === 0x03) interrupt();
        else if (raw && (b === 0x7f || b === 0x08)) {
          // One character back: drop UTF-8 continuation bytes with their lead byte.
          while (length > 0 && (line[length - 1]! & 0xc0) === 0x80) line[--length] = 0;
          if (length > 0) line[--length] = 0;
        } else if (raw && b === 0x15) {
          line.fill(0, 0, length);
          length = 0;
        } else append(b); // Other control bytes stay in the line, and the parser refuses it whole.
      }
    } finally {
      // The bytes read may hold a key: nothing keeps them past this call.
      bytes.fill(0);
    }
  };
  const onEnd = () => {
    if (length > 0 || overflow) endLine();
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
    line.fill(0);
    length = 0;
    checks.abort(new Error('the run ended'));
    unsubscribe?.();
    stopped = true;
    for (const job of waiting.splice(0)) discard(job);
  };
  options.signal?.addEventListener('abort', stop, { once: true });
  if (options.signal?.aborted) stop();

  return {
    stop,
    async settled() {
      // Lines arrive through the event loop: let the ones already written be read first.
      await new Promise((resolve) => setImmediate(resolve));
      if (reportScheduled) await new Promise((resolve) => setImmediate(resolve));
      while (working) await working;
    },
  };
}
