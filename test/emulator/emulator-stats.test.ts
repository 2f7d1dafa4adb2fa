import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { keyFingerprint } from '../../src/emulator/emulator-core.ts';
import { waitFor } from '../support/wait-for.ts';
import { anthropicClient, openaiClient, rejectionOf } from './sdk-clients.ts';

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

/** Lets queued I/O run (never a cooldown wait: time itself only moves through the manual clock). */
const until = (check: () => boolean) => waitFor(check, 'the requests to reach the emulator');

const SECRET = 'sk-primary-secret-0001';
const ask = (client: Anthropic, model = 'claude-sonnet-4-6', headers?: Record<string, string>) =>
  client.messages.create(
    { model, max_tokens: 16, messages: [{ role: 'user', content: 'count me' }] },
    headers ? { headers } : undefined,
  );

describe('stats', () => {
  it('records calls by key (alias or fingerprint), model, status and flavor — never the plaintext key', async () => {
    emu = await startEmulator({
      clock: createManualClock(0),
      profile: {
        acceptAnyKey: true,
        keys: [{ alias: 'primary', key: SECRET, quotas: { default: { rpm: 2 } } }],
      },
    });
    const primary = anthropicClient(emu, SECRET);
    await ask(primary, 'claude-sonnet-4-6', { 'Idempotency-Key': 'turn-7-call-1' });
    await ask(primary, 'claude-sonnet-4-6');
    expect(await rejectionOf(ask(primary))).toBeInstanceOf(Anthropic.RateLimitError);
    const stranger = 'sk-stranger-key-000042';
    await openaiClient(emu, 'openai', stranger).chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'x' }],
    });

    const stats = emu.stats();
    const fp = keyFingerprint(stranger);
    expect(stats.totalCalls).toBe(4);
    expect(stats.byKey).toEqual({ primary: 3, [fp]: 1 });
    expect(stats.byModel).toEqual({ 'claude-sonnet-4-6': 3, 'gpt-4o': 1 });
    expect(stats.byStatus).toEqual({ '200': 3, '429': 1 });
    expect(stats.byFlavor).toEqual({ anthropic: 3, openai: 1 });
    expect(stats.calls.map((c) => c.seq)).toEqual([1, 2, 3, 4]);
    expect(stats.calls[0]).toMatchObject({
      key: 'primary',
      idempotencyKey: 'turn-7-call-1',
      status: 200,
      stream: false,
    });
    expect(stats.calls[0]!.inputTokens).toBe(2);
    expect(stats.calls[0]!.outputTokens).toBeGreaterThan(0);
    expect(stats.calls[2]).toMatchObject({ status: 429, outputTokens: 0 });
    const json = JSON.stringify(stats);
    expect(json).not.toContain(SECRET);
    expect(json).not.toContain(stranger);

    const viaHttp = await (await fetch(`${emu.controlURL}/_emulator/stats`)).json();
    expect(viaHttp).toEqual(stats);
    // Control endpoints answer on every flavor port too.
    const onFlavorPort = await (await fetch(`${emu.baseURL('anthropic')}/_emulator/stats`)).json();
    expect(onFlavorPort.totalCalls).toBe(4);
  });

  it('maxInFlight: four concurrent calls held by emulated latency → 4', async () => {
    const clock = createManualClock(0);
    emu = await startEmulator({ clock, profile: { latency: { minMs: 1_000, maxMs: 1_000 } } });
    const client = anthropicClient(emu);
    const calls = Promise.all([ask(client), ask(client), ask(client), ask(client)]);
    await until(() => clock.pending() === 4);
    clock.advance(1_000);
    await calls;
    const stats = emu.stats();
    expect(stats.maxInFlight).toBe(4);
    expect(stats.calls.map((c) => c.inFlightAtStart).sort()).toEqual([1, 2, 3, 4]);
    expect(stats.calls.every((c) => c.endedAt - c.startedAt === 1_000)).toBe(true);
  });

  it('maxInFlight proves a client-side concurrency limit of 2 held over 8 calls', async () => {
    const clock = createManualClock(0);
    emu = await startEmulator({ clock, seed: 9, profile: { latency: { minMs: 100, maxMs: 900 } } });
    const client = openaiClient(emu);
    let active = 2;
    const worker = async () => {
      for (let i = 0; i < 4; i++)
        await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: `${i}` }] });
      active--;
    };
    const work = Promise.all([worker(), worker()]);
    // Time moves only once every live worker has a call parked in the emulator.
    while (active > 0) {
      await until(() => active === 0 || clock.pending() >= active);
      clock.runNext();
    }
    await work;
    const stats = emu.stats();
    expect(stats.totalCalls).toBe(8);
    expect(stats.maxInFlight).toBe(2);
  });

  it('reset() over HTTP clears stats; time-scale and fault endpoints validate their input', async () => {
    emu = await startEmulator({ clock: createManualClock(0) });
    await ask(anthropicClient(emu));
    const post = (path: string, body?: unknown) =>
      fetch(`${emu!.controlURL}/_emulator/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    expect((await post('reset')).status).toBe(200);
    expect(emu.stats().totalCalls).toBe(0);
    const bad = await post('time-scale', { scale: 0 });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ field: 'scale' });
    expect((await post('time-scale', { scale: 10 })).status).toBe(200);
    const { id } = await (await post('faults', { kind: 'overloaded', match: { flavor: 'openai' } })).json();
    expect(id).toMatch(/^fault-/);
    const client = openaiClient(emu);
    const call = () =>
      client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    expect(await rejectionOf(call())).toBeInstanceOf(OpenAI.InternalServerError);
    const del = await fetch(`${emu.controlURL}/_emulator/faults/${id}`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    await expect(call()).resolves.toBeDefined();
    expect((await fetch(`${emu.controlURL}/_emulator/faults/${id}`, { method: 'DELETE' })).status).toBe(404);
  });
});
