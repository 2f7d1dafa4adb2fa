import { parseByokLine } from './byok-command.ts';
import type { ByokExpiryReason, ByokReceipt } from './byok-types.ts';
import type { KeySealer, SealedKey } from '../redact/sealed-key.ts';

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

/** A command waiting for its turn (its key sealed), or a line of answer kept in typing order. */
type Waiting =
  | { readonly kind: 'inject'; readonly provider: string; readonly sealed: SealedKey; readonly aad: string }
  | { readonly kind: 'say'; readonly line: string }
  | { readonly kind: 'ignored'; count: number };

/** What the console's queue needs, every option resolved. */
export interface CommandQueueParts {
  readonly byok: ByokConsoleTarget | undefined;
  readonly sessionId: string;
  readonly maxWaiting: number;
  /** Seals the waiting commands' keys (the console's own key). */
  readonly sealer: KeySealer;
  /** Cancels the key checks in flight (the console stopped). */
  readonly checks: AbortSignal;
  /** Prints one line for the user. */
  readonly say: (line: string) => void;
  readonly isStopped: () => boolean;
}

/**
 * The console's commands, answered one at a time in the order they were typed: each `/byok` line's key is sealed
 * while it waits, handed to the runtime as bytes, and wiped once answered or dropped.
 */
export interface CommandQueue {
  /** Parses one typed line (bytes the caller wipes) and queues its command, its refusal, or an "ignored" note. */
  submit(line: Buffer): void;
  /** Drops every waiting command, its key wiped. */
  discardAll(): void;
  /** Resolves once every command read so far has been answered (or dropped). */
  settled(): Promise<void>;
}

/** Answers one queued job: says its line, or hands its key to the runtime and says what came of it. */
async function handle(parts: CommandQueueParts, job: Waiting): Promise<void> {
  const { byok, sessionId, sealer, say } = parts;
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
      byok.inject(sessionId, job.provider, key, { signal: parts.checks }),
    );
    say(`${r.provider} key ${r.masked} active for session ${r.sessionId}`);
  } catch (e) {
    // ByokRejectedError, ConfigError (format, unknown provider, BYOK off) and the vault's own errors are
    // one line that never holds the key; anything else is sanitized all the same.
    say(e instanceof Error ? e.message : String(e));
  } finally {
    sealer.wipe(job.sealed);
  }
}

/** The queue of a console's `/byok` commands. */
export function createCommandQueue(parts: CommandQueueParts): CommandQueue {
  const { maxWaiting, sealer, say } = parts;
  const waiting: Waiting[] = [];
  let working: Promise<void> | undefined;
  let serial = 0;

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

  const work = async (): Promise<void> => {
    for (let job = waiting.shift(); job; job = waiting.shift()) {
      if (parts.isStopped()) discard(job);
      else await handle(parts, job);
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

  return {
    submit,
    discardAll() {
      for (const job of waiting.splice(0)) discard(job);
    },
    async settled() {
      // Lines arrive through the event loop: let the ones already written be read first.
      await new Promise((resolve) => setImmediate(resolve));
      if (reportScheduled) await new Promise((resolve) => setImmediate(resolve));
      while (working) await working;
    },
  };
}
