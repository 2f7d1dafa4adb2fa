import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import type { KeyForm } from './key-forms.ts';

/**
 * Searches the raw memory of a live process (`/proc/<pid>/mem`, every readable mapping) for byte
 * patterns. Linux only; the caller must be allowed to trace the process (its parent is, as root or with
 * ptrace_scope ≤ 1). Stop the process first (SIGSTOP) for a consistent image.
 */

/** One place a pattern was found. */
export interface MemoryHit {
  readonly form: string;
  readonly address: string;
  /** The mapping it is in: `[heap]`, `[anon]`, a file path. */
  readonly mapping: string;
  /** 48 bytes before and after, as Latin-1 with non-printables as `.`: what surrounds the copy. */
  readonly context: string;
}

/** Options of {@link scanProcessMemory}. */
export interface ScanOptions {
  /** Report at most this many hits per form. Default 5. */
  readonly maxHitsPerForm?: number;
  /**
   * Read only writable mappings (heap, stacks, anonymous memory, a file's private copies): data a process
   * makes at run time can only be there, and read-only code and files are most of the image. Default true.
   */
  readonly writableOnly?: boolean;
}

/** What a scan saw. */
export interface MemoryScan {
  readonly hits: readonly MemoryHit[];
  /** Bytes read. */
  readonly bytes: number;
  /** Readable mappings read. */
  readonly mappings: number;
}

const CHUNK = 32 * 1024 * 1024;

/**
 * Reads every readable mapping of `pid` and reports each occurrence of each form (at most `maxHitsPerForm`
 * per form). Mappings the kernel refuses to read (`[vvar]`, device memory) are skipped.
 *
 * @example
 * ```ts
 * process.kill(child.pid, 'SIGSTOP');
 * const scan = scanProcessMemory(child.pid, keyForms(key));
 * process.kill(child.pid, 'SIGCONT');
 * ```
 */
export function scanProcessMemory(
  pid: number,
  forms: readonly KeyForm[],
  options: ScanOptions = {},
): MemoryScan {
  const maxHitsPerForm = options.maxHitsPerForm ?? 5;
  const writableOnly = options.writableOnly ?? true;
  const maps = readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n');
  const fd = openSync(`/proc/${pid}/mem`, 'r');
  const overlap = Math.max(...forms.map((f) => f.bytes.length)) - 1;
  const buffer = Buffer.alloc(CHUNK + overlap);
  const hits: MemoryHit[] = [];
  const perForm = new Map<string, number>();
  const seen = new Set<string>();
  let bytes = 0;
  let mappings = 0;
  try {
    for (const line of maps) {
      const m = /^([0-9a-f]+)-([0-9a-f]+) (r)(\S)\S* \S+ \S+ \S+\s*(.*)$/.exec(line);
      if (!m) continue;
      if (writableOnly && m[4] !== 'w') continue;
      const mapping = m[5]?.trim() || '[anon]';
      if (mapping === '[vvar]' || mapping === '[vsyscall]' || mapping.startsWith('/dev/')) continue;
      const start = BigInt(`0x${m[1]}`);
      const end = BigInt(`0x${m[2]}`);
      mappings++;
      let carried = 0;
      for (let at = start; at < end; ) {
        const want = Number(end - at < BigInt(CHUNK) ? end - at : BigInt(CHUNK));
        let got = 0;
        try {
          got = readSync(fd, buffer, carried, want, at);
        } catch {
          break; // an unreadable mapping (or one that vanished): skip the rest of it
        }
        if (got <= 0) break;
        bytes += got;
        const view = buffer.subarray(0, carried + got);
        for (const form of forms) {
          for (let i = view.indexOf(form.bytes); i >= 0; i = view.indexOf(form.bytes, i + 1)) {
            const address = `0x${(at - BigInt(carried) + BigInt(i)).toString(16)}`;
            if (seen.has(`${form.name}@${address}`)) continue;
            seen.add(`${form.name}@${address}`);
            const n = perForm.get(form.name) ?? 0;
            if (n >= maxHitsPerForm) break;
            perForm.set(form.name, n + 1);
            const around = view.subarray(Math.max(0, i - 48), i + form.bytes.length + 48);
            const context = Array.from(around, (b) =>
              b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.',
            ).join('');
            hits.push({ form: form.name, address, mapping, context });
          }
        }
        // Keep the tail, so a pattern across two reads is still found (a short one found twice is
        // reported once: hits are keyed by address).
        carried = Math.min(overlap, view.length);
        view.copy(buffer, 0, view.length - carried);
        at += BigInt(got);
      }
    }
  } finally {
    closeSync(fd);
    buffer.fill(0);
  }
  return { hits, bytes, mappings };
}
