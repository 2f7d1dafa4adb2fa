import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyForms } from '../support/key-forms.ts';
import { scanProcessMemory } from '../support/process-memory.ts';
import { findKeyInSnapshot } from './heap-retainers.ts';
import { holderKey } from './leak-holder-key.ts';
import { childScript } from '../support/test-child.ts';

// The leak tests are only as good as their detectors. One process holds a canary per form, each key in
// ONE form (every form its own key), and each case asserts that the raw-memory scan and the heap-snapshot
// search find exactly what they claim to find for its key — and that a key the process never held gives no
// hit at all (no false positive from the harness itself). Without this, a leak test could pass because it
// is blind. (One holder for all forms: a process and a heap snapshot per form cost half a minute.)

const seed = randomBytes(8).toString('hex');
const dir = mkdtempSync(join(tmpdir(), 'leak-detectors-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function holder(forms: string[]): Promise<{ pid: number; snapshot: string; child: ChildProcess }> {
  const snapshot = join(dir, 'holder.heapsnapshot');
  const child = spawn(
    process.execPath,
    [
      '--expose-gc',
      '--heap-snapshot-string-limit=10000000',
      childScript(join(import.meta.dirname, 'leak-holder-child.ts')),
      JSON.stringify({ seed, forms, snapshotPath: snapshot }),
    ],
    { cwd: join(import.meta.dirname, '../..'), stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    const guard = setTimeout(() => reject(new Error('holder not ready in 60 s')), 60_000);
    child.stdout?.setEncoding('utf8').on('data', (s: string) => {
      if (s.includes('ready')) {
        clearTimeout(guard);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`holder exited ${code}`)));
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
  let held: Awaited<ReturnType<typeof holder>>;
  beforeAll(async () => {
    held = await holder(cases.map(([form]) => form));
  }, 120_000);
  afterAll(() => {
    held?.child.kill('SIGKILL');
  });

  it.each(cases)(
    'a process holding the key as %s',
    async (form, raw, rawAbsent, inSnapshot) => {
      const key = holderKey(seed, form);
      const found = new Set(scan(held.pid, key).hits.map((h) => h.form));
      for (const name of raw) expect(found, `raw scan finds ${name}`).toContain(name);
      for (const name of rawAbsent) expect(found, `raw scan does not report ${name}`).not.toContain(name);
      const hits = findKeyInSnapshot(held.snapshot, key);
      if (inSnapshot === 'none') expect(hits.map((h) => h.kind)).toEqual([]);
      else expect(hits.map((h) => h.kind)).toContain(inSnapshot);
    },
    120_000,
  );

  it('a key the process never held: no hit in raw memory or the snapshot', async () => {
    const key = holderKey(seed, 'never held');
    const result = scan(held.pid, key);
    expect(result.bytes).toBeGreaterThan(10_000_000);
    expect(result.hits).toEqual([]);
    expect(findKeyInSnapshot(held.snapshot, key)).toEqual([]);
  }, 120_000);
});
