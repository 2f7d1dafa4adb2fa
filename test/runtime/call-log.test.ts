import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { Turn } from '../../src/core/turn.ts';
import { driveUntil, emulatorEndpoint } from '../support/runtime-harness.ts';

// Recognisable fake keys: the middle parts must never appear in a log line, even masked keys keep only 4 chars.
const PRIMARY_KEY = 'sk-ant-api03-CALLLOGPRIMARYKEY-7f3a9c2e51d0';
const BACKUP_KEY = 'sk-proj-CALLLOGBACKUPKEY-0c4be81f93a7';
const KEY_PARTS = ['CALLLOGPRIMARYKEY', 'CALLLOGBACKUPKEY', PRIMARY_KEY, BACKUP_KEY];

const ENDPOINT_OF_FLAVOR: Record<string, string> = { anthropic: 'primary', openai: 'backup' };
const PROVIDER_OF_FLAVOR: Record<string, string> = { anthropic: 'anthropic', openai: 'openai' };

interface CallLine {
  msg: string;
  level: number;
  agent: string;
  tier: string;
  endpoint: string;
  outcome: 'ok' | 'fault';
  fault?: string;
  status?: number;
  waitMs: number;
  latencyMs: number;
  confirmed_model?: string;
}

let emulator: Emulator;
let clock: ManualClock;

beforeAll(async () => {
  clock = createManualClock(Date.parse('2026-08-17T07:40:00+09:00'));
  emulator = await startEmulator({ clock, profile: { seed: 21 } });
});
afterAll(async () => {
  await emulator.close();
});

describe('the call log (one pino line per upstream attempt)', () => {
  it('logs every attempt with agent, tier, endpoint, outcome, fault, waitMs and confirmed_model, and no key', async () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: 'info',
      destination: { write: (line: string) => lines.push(line) },
    });
    const supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'primary', 'anthropic', 'claude-sonnet-4-6', PRIMARY_KEY),
          emulatorEndpoint(emulator, 'backup', 'openai', 'gpt-4o-mini', BACKUP_KEY),
        ],
        chains: { premium: ['primary', 'backup'], light: ['backup'] },
      },
      { clock, logger, random: () => 0.5 },
    );
    const turns: Turn[] = [];
    const ask = async (agent: string, prompt: string) => {
      let turn: Turn | undefined;
      void supervisor
        .agent(agent)!
        .ask(prompt)
        .then((t) => (turn = t));
      await driveUntil(clock, () => turn !== undefined, { stepMs: 100, maxSimulatedMs: 60_000 });
      turns.push(turn!);
      return turn!;
    };
    try {
      supervisor.spawnAgent({ name: 'analyst-macro', chain: 'premium', tier: 'analysis' });
      supervisor.spawnAgent({ name: 'outbox-checker', chain: 'light', tier: 'ops' });
      supervisor.spawnAgent({ name: 'oversized', chain: 'light', tier: 'ops', maxTokens: 10_000_000 });

      // 1. A 429 on the primary, then the backup answers: two attempts, one fault line and one ok line.
      emulator.addFault({
        kind: 'rate_limit',
        match: { flavor: 'anthropic' },
        retryAfterMs: 30_000,
        count: 1,
      });
      expect((await ask('analyst-macro', 'rates outlook')).outcome).toBe('fallback');
      // 2. A 500 on the backup, retried after backoff on the same endpoint: a fault line, then an ok line.
      emulator.addFault({ kind: 'server_error_empty', match: { flavor: 'openai' }, count: 1 });
      expect((await ask('outbox-checker', 'queue depth')).outcome).toBe('answered');
      // 3. A bad request: one fault line, no retry.
      expect((await ask('oversized', 'everything')).outcome).toBe('failed');
      // 4. Once the primary's cooldown has passed, the primary answers again.
      clock.advance(30_000);
      expect((await ask('analyst-macro', 'rates outlook, later')).outcome).toBe('answered');
    } finally {
      await supervisor.stop();
    }

    for (const line of lines) for (const part of KEY_PARTS) expect(line).not.toContain(part);

    const parsed = lines.map((l) => JSON.parse(l) as CallLine);
    const calls = parsed.filter((l) => l.msg === 'call');
    const upstream = emulator.stats().calls;
    // Exactly one line per upstream attempt, in the same order, each naming the endpoint the call went to.
    expect(calls.map((l) => [l.endpoint, l.outcome])).toEqual(
      upstream.map((c) => [ENDPOINT_OF_FLAVOR[c.flavor], c.status === 200 ? 'ok' : 'fault']),
    );
    expect(calls).toHaveLength(turns.reduce((n, t) => n + t.attempts, 0));
    expect(
      calls.map((l) => [l.agent, l.tier, l.endpoint, l.outcome, l.fault ?? null, l.status ?? null]),
    ).toEqual([
      ['analyst-macro', 'analysis', 'primary', 'fault', 'rate_limited', 429],
      ['analyst-macro', 'analysis', 'backup', 'ok', null, null],
      ['outbox-checker', 'ops', 'backup', 'fault', 'server_error', 500],
      ['outbox-checker', 'ops', 'backup', 'ok', null, null],
      ['oversized', 'ops', 'backup', 'fault', 'bad_request', 400],
      ['analyst-macro', 'analysis', 'primary', 'ok', null, null],
    ]);
    for (const [i, line] of calls.entries()) {
      expect(line.level).toBe(30);
      expect(line.waitMs).toBeGreaterThanOrEqual(0);
      expect(line.latencyMs).toBeGreaterThanOrEqual(0);
      if (line.outcome === 'ok') {
        // The model the provider says answered, not the one we configured: seed 000 counts these.
        const call = upstream[i]!;
        expect(line.confirmed_model).toBe(`${PROVIDER_OF_FLAVOR[call.flavor]}/${call.model}`);
      } else {
        expect(line.confirmed_model).toBeUndefined();
      }
    }
    // The retry after the 500 waited for its backoff, and says so.
    expect(calls[3]!.waitMs).toBeGreaterThan(0);
    expect(calls.filter((l) => l.confirmed_model !== undefined)).toHaveLength(
      emulator.stats().byStatus['200'] ?? 0,
    );
    expect(emulator.stats().byStatus).toEqual({ '200': 3, '400': 1, '429': 1, '500': 1 });
  });
});
