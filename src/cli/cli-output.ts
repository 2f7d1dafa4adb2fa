import { scrubSecrets } from '../redact/secret-scrubber.ts';

/** Where a command writes its human-readable lines. Default: stdout, one line per call. */
export type Print = (line: string) => void;

/**
 * Writes one line to stdout, scrubbed of every known and registered secret first.
 *
 * @example
 * ```ts
 * printToStdout('emulator closed');
 * ```
 */
export const printToStdout: Print = (line) => {
  process.stdout.write(`${scrubSecrets(line)}\n`);
};

/**
 * Left-aligns the first column of label/value rows, so a block of output reads as a table.
 *
 * @example
 * ```ts
 * alignRows([['control', 'http://127.0.0.1:4000'], ['anthropic', 'http://127.0.0.1:4001']]);
 * // ['control    http://127.0.0.1:4000', 'anthropic  http://127.0.0.1:4001']
 * ```
 */
export function alignRows(rows: ReadonlyArray<readonly [string, string]>, indent = ''): string[] {
  const width = Math.max(0, ...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${indent}${label.padEnd(width)}  ${value}`.trimEnd());
}

/**
 * Cuts `text` to one line of at most `max` characters (an ellipsis marks the cut).
 *
 * @example
 * ```ts
 * oneLine('first\nsecond', 80); // 'first second'
 * ```
 */
export function oneLine(text: string, max = Number.POSITIVE_INFINITY): string {
  const flat = text.replace(/\s*\n\s*/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, Math.max(0, max - 1))}…` : flat;
}
