import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_MACHINE_VERSION } from '../../machines/agent.machine.ts';
import { storeCallMemo } from '../../src/runs/store-call-memo.ts';
import { findDatabaseUnavailable } from '../../src/store/database-unavailable-error.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore, type RunStore } from '../../src/store/run-store.ts';
import { perFileDatabase, postgresUrl } from '../support/per-file-database.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';

/*
 * A memo write rides out a database that is gone for less than its window, but a database that stays gone costs
 * one window, not one per turn: the CLI saw a run whose PostgreSQL answered garbage take 26.7 s to stop with a 3 s
 * database deadline (BREAKWATER_DB_TIMEOUT_MS), two turns' writes each waiting their own 12 s. Real PostgreSQL behind
 * a TCP proxy that answers garbage; the store's own bounds (short here); the attempts counted on the real store.
 */

perFileDatabase();

let proxy: TcpProxy;
let database: BreakwaterDatabase;
let store: RunStore;
/** Each statement the memo asked of the store. */
let attempts = 0;

beforeAll(async () => {
  // The schema first, on the server directly: the proxied store then only writes.
  await (await openDatabase({ url: postgresUrl() })).close();
  const server = new URL(postgresUrl());
  proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
  const proxied = new URL(postgresUrl());
  proxied.host = `127.0.0.1:${proxy.port}`;
  const ms = 500;
  database = await openDatabase({
    url: proxied.toString(),
    timeouts: { connectTimeoutMs: ms, queryTimeoutMs: ms, statementTimeoutMs: ms, quarantineMs: ms },
  });
  const real = createRunStore(database);
  store = {
    ...real,
    rememberCall: (input, opts) => {
      attempts++;
      return real.rememberCall(input, opts);
    },
  };
});

afterAll(async () => {
  await database?.close();
  await proxy?.close();
});

describe('memo writes while the database is gone', () => {
  it('the first write waits out its window; the next tries once; a write after the database is back lands', async () => {
    const runId = `memo-lost-${Date.now()}`;
    await store.createRun({ runId, scenario: 'memo', totalRounds: 1, machineVersion: AGENT_MACHINE_VERSION });
    const memo = await storeCallMemo(store, runId, 1, undefined, { retryForMs: 6_000 });
    await memo.remember(`${runId}:1:I1:Kai:call0`, { text: 'before' });
    expect(attempts).toBe(1);

    proxy.setMode('garbage');
    proxy.resetAll();
    attempts = 0;
    const first = await memo.remember(`${runId}:1:I2:Kai:call0`, { text: 'lost 1' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(findDatabaseUnavailable(first)).toBeDefined();
    // Tried again while its window lasted (250 ms, then 500, 1000, 2000 between tries): 6 s leaves room for a first try slowed by a loaded machine.
    expect(attempts).toBeGreaterThanOrEqual(2);

    attempts = 0;
    const second = await memo.remember(`${runId}:1:I3:Kai:call0`, { text: 'lost 2' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(findDatabaseUnavailable(second)).toBeDefined();
    expect(attempts).toBe(1);

    proxy.setMode('forward');
    // Its quarantine (500 ms) over, the store connects again; the write may meet the quarantine's end once.
    attempts = 0;
    for (let i = 0; i < 40; i++) {
      const ok = await memo.remember(`${runId}:1:I4:Kai:call0`, { text: 'back' }).then(
        () => true,
        () => false,
      );
      if (ok) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(await store.recallCall(`${runId}:1:I4:Kai:call0`)).toEqual({ text: 'back' });
    // Back: the next loss is ridden out over a whole window again.
    proxy.setMode('garbage');
    proxy.resetAll();
    attempts = 0;
    const again = await memo.remember(`${runId}:1:I5:Kai:call0`, { text: 'lost 3' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(findDatabaseUnavailable(again)).toBeDefined();
    expect(attempts).toBeGreaterThanOrEqual(2);
  });

  it("a memo made again for the round with the process's answered calls recalls an answer whose write never landed", async () => {
    const runId = `memo-answered-${Date.now()}`;
    proxy.setMode('forward');
    for (let i = 0; i < 40; i++) {
      const ok = await store
        .createRun({ runId, scenario: 'memo', totalRounds: 1, machineVersion: AGENT_MACHINE_VERSION })
        .then(
          () => true,
          () => false,
        );
      if (ok) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    const answered = new Map<string, unknown>();
    const key = `${runId}:1:I1:Kai:call0`;
    const memo = await storeCallMemo(store, runId, 1, undefined, { retryForMs: 500, answered });
    proxy.setMode('garbage');
    proxy.resetAll();
    const lost = await memo.remember(key, { text: 'paid once' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(findDatabaseUnavailable(lost)).toBeDefined();
    proxy.setMode('forward');
    // The database is back; the answer never reached it.
    let stored: unknown = 'unread';
    for (let i = 0; i < 40 && stored === 'unread'; i++) {
      stored = await store.recallCall(key).then(
        (v) => v,
        () => 'unread',
      );
      if (stored === 'unread') await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(stored).toBeUndefined();
    // The same process's next memo of the round has it; one made without the process's answers does not.
    const again = await storeCallMemo(store, runId, 1, undefined, { answered });
    expect(await again.recall(key)).toEqual({ text: 'paid once' });
    const fresh = await storeCallMemo(store, runId, 1);
    expect(await fresh.recall(key)).toBeUndefined();
  });
});
