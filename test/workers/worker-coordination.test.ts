import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isWorkerCoordinationError,
  planWorkerCoordination,
  probeCoordination,
  storeWorkerCoordination,
} from '../../src/runs/workers/worker-coordination.ts';
import { REDIS_URL } from '../support/coordination-env.ts';

/*
 * Where a worker of a run coordinates: the run decides the server, stored without secrets; a worker's own
 * --coordination-url may only bring the credentials for that same server.
 */

const STORE = 'postgres://app:storepw@db.example:5432/breakwater';

const refused = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    expect(isWorkerCoordinationError(e)).toBe(true);
    return (e as Error).message;
  }
  throw new Error('expected a refusal');
};

describe('storeWorkerCoordination', () => {
  it('stores a Redis URL without its password, says one was there, and keeps the key prefix', () => {
    expect(storeWorkerCoordination('redis://:s3cretpw@127.0.0.1:6379/2', 'app:')).toEqual({
      backend: 'redis',
      url: 'redis://127.0.0.1:6379/2',
      secret: true,
      keyPrefix: 'app:',
    });
    expect(storeWorkerCoordination('postgres://u@h/db?password=pw&sslmode=require')).toEqual({
      backend: 'postgres',
      url: 'postgres://u@h/db?sslmode=require',
      secret: true,
    });
    expect(storeWorkerCoordination('rediss://cache:6380')).toMatchObject({ backend: 'redis', secret: false });
  });

  it('never keeps a password, whatever the URL (property, fixed seed)', () => {
    const word = fc.stringMatching(/^[A-Za-z0-9]{6,20}$/);
    fc.assert(
      fc.property(
        fc.constantFrom('redis', 'rediss', 'postgres', 'postgresql'),
        word,
        word,
        fc.boolean(),
        (scheme, user, pw, asParam) => {
          const secret = `PW${pw}`;
          const url = asParam
            ? `${scheme}://${user}@host.example:1234/0?password=${secret}`
            : `${scheme}://${user}:${secret}@host.example:1234/0`;
          const stored = storeWorkerCoordination(url);
          expect(stored.secret).toBe(true);
          expect(JSON.stringify(stored)).not.toContain(secret);
          // And the stored URL still names the same server: a worker's full URL is accepted for it.
          const plan = planWorkerCoordination({ runId: 'r', stored, databaseUrl: STORE, override: url });
          expect(plan.options.url).toBe(url);
          expect(plan.location).not.toContain(secret);
        },
      ),
      { seed: 1515, numRuns: 200 },
    );
  });

  it('refuses a URL that does not parse, without echoing it', () => {
    const message = refused(() => storeWorkerCoordination('redis//:pw-in-here@nowhere'));
    expect(message).not.toContain('pw-in-here');
  });
});

describe('planWorkerCoordination', () => {
  const redis = storeWorkerCoordination('redis://:s3cretpw@127.0.0.1:6379/0', 'bw:');

  it('a run that stored none coordinates on the worker’s store', () => {
    const plan = planWorkerCoordination({ runId: 'r', stored: undefined, databaseUrl: STORE });
    expect(plan.options).toEqual({ backend: 'postgres', url: STORE });
    expect(plan.location).not.toContain('storepw');
  });

  it('a worker’s URL for the same server brings the password (default port and database 0 are the same server)', () => {
    const plan = planWorkerCoordination({
      runId: 'r',
      stored: redis,
      databaseUrl: STORE,
      override: 'redis://:s3cretpw@127.0.0.1',
    });
    expect(plan.options).toEqual({ backend: 'redis', url: 'redis://:s3cretpw@127.0.0.1', keyPrefix: 'bw:' });
  });

  it('refuses a worker’s URL naming another server or database, naming the flag and the run, without passwords', () => {
    for (const other of [
      'redis://:s3cretpw@127.0.0.1:6380',
      'redis://:s3cretpw@127.0.0.1:6379/1',
      'redis://:s3cretpw@10.0.0.9:6379',
      'postgres://app:s3cretpw@127.0.0.1:6379/0',
    ]) {
      const message = refused(() =>
        planWorkerCoordination({ runId: 'run-7', stored: redis, databaseUrl: STORE, override: other }),
      );
      expect(message).toMatch(
        /^--coordination-url names .* but run run-7 coordinates on Redis at redis:\/\/127\.0\.0\.1:6379\/0/,
      );
      expect(message).not.toContain('s3cretpw');
    }
    // A run on its store: a worker's flag must name that store's server too.
    const message = refused(() =>
      planWorkerCoordination({ runId: 'r', stored: undefined, databaseUrl: STORE, override: REDIS_URL }),
    );
    expect(message).toContain('PostgreSQL at postgres://app@db.example:5432/breakwater');
    expect(message).not.toContain('storepw');
  });

  it('a password the run needs and did not store: one line saying how to give it', () => {
    const message = refused(() => planWorkerCoordination({ runId: 'r', stored: redis, databaseUrl: STORE }));
    expect(message).toContain('--coordination-url or env BREAKWATER_COORDINATION_URL');
    expect(message).not.toContain('s3cretpw');
    // On the store's own server, the worker's store URL carries it.
    const onStore = storeWorkerCoordination(STORE);
    expect(planWorkerCoordination({ runId: 'r', stored: onStore, databaseUrl: STORE }).options.url).toBe(
      STORE,
    );
  });

  it('without a secret, the stored URL is used as it is', () => {
    const stored = storeWorkerCoordination(REDIS_URL, 'p:');
    expect(planWorkerCoordination({ runId: 'r', stored, databaseUrl: STORE }).options).toEqual({
      backend: 'redis',
      url: stored.url,
      keyPrefix: 'p:',
    });
  });
});

describe('probeCoordination', () => {
  it('an unreachable backend is one line naming the flag, without the password', async () => {
    const e = await probeCoordination(
      { backend: 'redis', url: 'redis://:s3cretpw@127.0.0.1:1/0' },
      '--coordination-url',
      5_000,
    ).catch((x: unknown) => x);
    expect(isWorkerCoordinationError(e)).toBe(true);
    const message = (e as Error).message;
    expect(message).toMatch(/^--coordination-url: /);
    expect(message).not.toContain('s3cretpw');
    expect(message.split('\n')).toHaveLength(1);
  });

  it('reaches a live one', async () => {
    await expect(probeCoordination({ backend: 'redis', url: REDIS_URL }, '--coordination-url')).resolves.toBe(
      undefined,
    );
  });
});
