import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { keyForms } from '../support/key-forms.ts';
import { scanProcessMemory } from '../support/process-memory.ts';
import { findKeyInSnapshot } from './heap-retainers.ts';
import { holderKey } from './leak-holder-key.ts';

// The leak tests are only as good as their detectors. Each case runs a process that holds a canary in
// ONE form, then asserts that the raw-memory scan and the heap-snapshot search find exactly what they
// claim to find — and that a process which never held the key gives no hit at all (no false positive
// from the harness itself). Without this, a leak test could pass because it is blind.

const seed = randomBytes(8).toString('hex');
const dir = mkdtempSync(join(tmpdir(), 'leak-detectors-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function holder(form: string): Promise<{ pid: number; snapshot: string; child: ChildProcess }> {
  const snapshot = join(dir, `${form.replace(/\W+/g, '-')}.heapsnapshot`);
  const child = spawn(
    process.execPath,
    [
      '--expose-gc',
      '--heap-snapshot-string-limit=10000000',
      '--import',
      'tsx',
      join(import.meta.dirname, 'leak-holder-child.ts'),
      JSON.stringify({ seed, form, snapshotPath: snapshot }),
    ],
    { cwd: join(import.meta.dirname, '../..'), stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    const guard = setTimeout(() => reject(new Error(`holder ${form} not ready in 60 s`)), 60_000);
    child.stdout?.setEncoding('utf8').on('data', (s: string) => {
      if (s.includes('ready')) {
        clearTimeout(guard);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`holder ${form} exited ${code}`)));
  });
  return { pid: child.pid!, snapshot, child };
}

function scan(pid: number, key: string) {
  process.kill(pid, 'SIGSTOP');
  try {
    return scanProcessMemory(pid, keyForms(key));
  } finally {
    process.kill(pid, 'SIGCONT');
  }
}

const cases: [
  form: string,
  raw: string[],
  rawAbsent: string[],
  snapshot: 'string' | 'char array' | 'none',
][] = [
  ['string', ['utf8', 'first half utf8'], [], 'string'],
  ['non-ascii string', ['latin1'], [], 'string'],
  ['two-byte string', ['utf16le'], [], 'string'],
  ['buffer', ['utf8'], [], 'none'],
  ['halves', ['first half utf8', 'second half utf8'], ['utf8'], 'string'],
  ['chars', [], [], 'char array'],
  ['char codes', ['array of char codes (Smis)'], [], 'none'],
  ['utf16 array', ['utf16le'], [], 'none'],
  ['hex', ['hex (lower)'], ['utf8'], 'none'],
  ['base64', ['base64@0'], ['utf8'], 'none'],
];

describe('the leak detectors see every form they claim to', () => {
  it.each(cases)(
    'a process holding the key as %s',
    async (form, raw, rawAbsent, inSnapshot) => {
      const key = holderKey(seed, form);
      const { pid, snapshot, child } = await holder(form);
      const found = new Set(scan(pid, key).hits.map((h) => h.form));
      for (const name of raw) expect(found, `raw scan finds ${name}`).toContain(name);
      for (const name of rawAbsent) expect(found, `raw scan does not report ${name}`).not.toContain(name);
      const hits = findKeyInSnapshot(snapshot, key);
      if (inSnapshot === 'none') expect(hits.map((h) => h.kind)).toEqual([]);
      else expect(hits.map((h) => h.kind)).toContain(inSnapshot);
      child.kill('SIGKILL');
    },
    120_000,
  );

  it('a process that never held the key: no hit in raw memory or the snapshot', async () => {
    const key = holderKey(seed, 'string');
    const { pid, snapshot, child } = await holder('none');
    const result = scan(pid, key);
    expect(result.bytes).toBeGreaterThan(10_000_000);
    expect(result.hits).toEqual([]);
    expect(findKeyInSnapshot(snapshot, key)).toEqual([]);
    child.kill('SIGKILL');
  }, 120_000);
});
