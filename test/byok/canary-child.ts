/**
 * The canary scenario, run in its own process (`node --expose-gc --import tsx`) so its V8 heap holds
 * nothing but the vault, the SDKs and undici: inject canary keys, use them, expire them, and write
 * heap snapshots while they live and after they expired. It reports what it logged, every error
 * message it saw, the vault's enumerable state and the snapshot paths as one JSON line on stdout;
 * the test searches all of it for the canaries.
 *
 * argv[2]: JSON `{ seed, snapshotDir, baseURLs: { openai, anthropic, gemini } }`.
 */
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { isByokRejectedError } from '../../src/byok/byok-errors.ts';
import { createKeyVault, type KeyVault } from '../../src/byok/key-vault.ts';
import { createManualClock } from '../../src/clock/clock.ts';
import type { Engine } from '../../src/core/engine-types.ts';
import { isEngineFaultError } from '../../src/core/fault.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { CANARY_PROVIDERS, type CanaryProvider, canaryKeyBytes } from './byok-canary.ts';

interface ChildInput {
  seed: string;
  snapshotDir: string;
  baseURLs: Record<CanaryProvider, string>;
}

const input = JSON.parse(process.argv[2] ?? '{}') as ChildInput;
const TTL_MS = 60_000;
const MODELS: Record<CanaryProvider, string> = {
  openai: 'gpt-4o-mini',
  anthropic: 'claude-sonnet-4-6',
  gemini: 'gemini-2.5-flash',
};

const logs: string[] = [];
const errors: string[] = [];
const state: string[] = [];
const logger = createLogger({ level: 'trace', destination: { write: (line: string) => logs.push(line) } });
const clock = createManualClock(1_000_000);

const vault: KeyVault = createKeyVault({
  clock,
  idleTtlMs: TTL_MS,
  logger,
  templates: Object.fromEntries(
    CANARY_PROVIDERS.map((p) => [p, { provider: p, model: MODELS[p], baseURL: input.baseURLs[p] }]),
  ),
});
/** Engines handed out while the keys lived, kept on purpose: a stale engine must hold no key either. */
const staleEngines: Engine[] = [];

function recordError(e: unknown, what: string): void {
  const err = e as Error;
  errors.push(err.message, String(err.stack ?? ''));
  logger.error({ err, what }, 'byok scenario error');
}

async function gcAndSnapshot(name: string): Promise<string> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  // Leave the socket-read callback whose promise chain resumed us: its native stack frames still
  // reference the last response's stream (and through it that request's headers) until it returns.
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  gc();
  return writeHeapSnapshot(join(input.snapshotDir, `${name}.heapsnapshot`));
}

/** Injects a canary held as bytes, and wipes them once the vault has read them. */
async function injectBytes(provider: CanaryProvider, kind: 'good' | 'bad') {
  const key = canaryKeyBytes(input.seed, provider, kind);
  try {
    return await vault.inject('canary-session', provider, key);
  } finally {
    key.fill(0);
  }
}

/** Everything that touches a plaintext canary happens in here, so nothing outside keeps one. */
async function injectAndUse(): Promise<void> {
  for (const provider of CANARY_PROVIDERS) {
    try {
      await injectBytes(provider, 'bad');
      errors.push(`UNEXPECTED: the bad ${provider} key was accepted`);
    } catch (e) {
      if (!isByokRejectedError(e)) throw e;
      recordError(e, 'rejected');
    }
    const receipt = await injectBytes(provider, 'good');
    logger.info({ receipt }, 'byok receipt');
    state.push(JSON.stringify(receipt));
    const engine = vault.engineFor(receipt.endpointId)!;
    staleEngines.push(engine);
    const result = await engine.call({
      messages: [{ role: 'user', content: 'Status report, please.' }],
      maxTokens: 16,
      idempotencyKey: `canary/${provider}/1`,
    });
    logger.info({ endpoint: result.endpoint, usage: result.usage, text: result.text }, 'byok call answered');
    state.push(JSON.stringify(vault.describe(receipt.endpointId)));
  }
  state.push(JSON.stringify(vault.list()), JSON.stringify(vault.list('canary-session')));
}

async function main(): Promise<void> {
  await injectAndUse();
  const liveSnapshot = await gcAndSnapshot('live');

  clock.advance(TTL_MS + 1);
  for (const engine of staleEngines) {
    try {
      await engine.call({
        messages: [{ role: 'user', content: 'Still there?' }],
        maxTokens: 16,
        idempotencyKey: `canary/${engine.endpoint.id}/after-expiry`,
      });
      errors.push(`UNEXPECTED: ${engine.endpoint.id} answered after expiry`);
    } catch (e) {
      if (!isEngineFaultError(e)) throw e;
      recordError(e, 'expired');
    }
  }
  state.push(
    JSON.stringify(vault.list()),
    JSON.stringify(vault.endpointsFor('canary-session')),
    JSON.stringify(staleEngines.map((e) => e.endpoint)),
  );
  const expiredSnapshot = await gcAndSnapshot('expired');
  process.stdout.write(`${JSON.stringify({ logs, errors, state, liveSnapshot, expiredSnapshot })}\n`);
}

main().catch((e) => {
  process.stderr.write(`canary child failed: ${(e as Error).stack}\n`);
  process.exit(1);
});
