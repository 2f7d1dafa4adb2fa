import type { Readable } from 'node:stream';

/** Parses a child's stdout as one JSON object per line (a line may arrive in pieces) and hands each to `push`. */
export function readJsonLines(stream: Readable, push: (line: Record<string, unknown>) => void): void {
  let buffer = '';
  stream.setEncoding('utf8').on('data', (s: string) => {
    buffer += s;
    const parts = buffer.split('\n');
    buffer = parts.pop()!;
    for (const p of parts) if (p.trim()) push(JSON.parse(p) as Record<string, unknown>);
  });
}
