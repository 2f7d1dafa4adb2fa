import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/index.ts';
import { CANARY_PROVIDERS, canaryAlias, canaryKey } from './byok-canary.ts';
import { countInSnapshot, findRetainers } from './heap-retainers.ts';

// A canary key per provider is injected, used and expired in a child process (canary-child.ts);
// then its plaintext is searched for in every log line, every error message, the vault's enumerable
// state and two V8 heap snapshots. The emulator runs here, in the parent, so the child's heap holds
// no copy of the keys but its own.

interface ChildReport {
  logs: string[];
  errors: string[];
  state: string[];
  liveSnapshot: string;
  expiredSnapshot: string;
}

const seed = randomBytes(8).toString('hex');
const dir = mkdtempSync(join(tmpdir(), 'byok-canary-'));
let emulator: Emulator;
let report: ChildReport;

beforeAll(async () => {
  emulator = await startEmulator({
    profile: {
      acceptAnyKey: false,
      keys: CANARY_PROVIDERS.map((p) => ({ alias: canaryAlias(p), key: canaryKey(seed, p) })),
    },
  });
  const input = {
    seed,
    snapshotDir: dir,
    baseURLs: Object.fromEntries(CANARY_PROVIDERS.map((p) => [p, emulator.baseURL(p)])),
  };
  // Asynchronous on purpose: the emulator answering the child lives on this event loop.
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--expose-gc',
      // Strings are cut at 1024 chars in a snapshot by default; a key deep in a long string would hide.
      '--heap-snapshot-string-limit=10000000',
      '--import',
      'tsx',
      join(import.meta.dirname, 'canary-child.ts'),
      JSON.stringify(input),
    ],
    { cwd: join(import.meta.dirname, '../..'), maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
  );
  report = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as ChildReport;
}, 180_000);

afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await emulator?.close();
});

const canaries = CANARY_PROVIDERS.flatMap((p) => [
  { provider: p, kind: 'good' as const, key: canaryKey(seed, p, 'good') },
  { provider: p, kind: 'bad' as const, key: canaryKey(seed, p, 'bad') },
]);

/** Names what holds each copy, so a failure says where the leak is. */
function leakReport(snapshot: string, key: string): string {
  return findRetainers(snapshot, key)
    .map(
      (hit) => `${hit.type} …${hit.excerpt.replace(key, '<CANARY>')}…\n    ${hit.retainers.join('\n    ')}`,
    )
    .join('\n');
}

describe('canary keys (one child process: inject, use, expire)', () => {
  it('the scenario ran: every good key answered through the emulator, every bad key was refused', () => {
    expect(report.errors.filter((e) => e.startsWith('UNEXPECTED'))).toEqual([]);
    const byKey = emulator.stats().byKey;
    for (const p of CANARY_PROVIDERS) {
      // One check call + one real call; nothing after expiry.
      expect(byKey[canaryAlias(p)]).toBe(2);
    }
    const oneLine = report.errors.filter((e) => !e.includes('\n'));
    expect(oneLine.filter((m) => / refused: auth \(\d{3}\)\./.test(m))).toHaveLength(3);
    expect(oneLine.filter((m) => /expired after 1 min without use/.test(m))).toHaveLength(3);
    expect(report.logs.length).toBeGreaterThanOrEqual(15);
  });

  it.each(canaries)(
    '$provider $kind canary: 0 occurrences in log lines, error messages and enumerable state',
    ({ key }) => {
      const hits = [...report.logs, ...report.errors, ...report.state].filter((s) => s.includes(key));
      expect(hits).toEqual([]);
    },
  );

  it.each(canaries)(
    '$provider $kind canary: 0 occurrences in the heap snapshot taken after expiry',
    ({ key }) => {
      const count = countInSnapshot(report.expiredSnapshot, key);
      expect(count, leakReport(report.expiredSnapshot, key)).toBe(0);
    },
  );

  it.each(canaries.filter((c) => c.kind === 'good'))(
    '$provider canary while live: exactly one copy, held by the secret scrubber registry (no SDK, undici or vault copy)',
    ({ key }) => {
      const hits = findRetainers(report.liveSnapshot, key);
      expect(hits.length, leakReport(report.liveSnapshot, key)).toBe(1);
      expect(hits[0]!.retainers.join(' ')).toMatch(/context:registered\]- object "system \/ Context"/);
    },
  );
});
