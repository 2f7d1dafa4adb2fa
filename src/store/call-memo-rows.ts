import { type Kysely, sql } from 'kysely';
import { chunk, encodeJson, requireId } from './store-codec.ts';
import type { StoreSchema } from './store-schema.ts';
import type { RememberCallInput, StoreCallOptions } from './store-types.ts';

/*
 * The call memo's rows (`call_results`): a finished call's result, written once under its idempotency key and read
 * back by a resumed round. Part of the run store (see run-store.ts).
 */

/** Keys in one `in (…)` list. */
const KEY_CHUNK = 5_000;

/** The run store's call memo methods. */
export function callMemoMethods(
  db: Kysely<StoreSchema>,
  now: () => Date,
): {
  rememberCall<T>(input: RememberCallInput<T>, opts?: StoreCallOptions): Promise<T>;
  recallCall<T = unknown>(idempotencyKey: string, opts?: StoreCallOptions): Promise<T | undefined>;
  recallCalls<T = unknown>(keys: readonly string[], opts?: StoreCallOptions): Promise<Record<string, T>>;
  recallCallsByPrefix<T = unknown>(
    runId: string,
    prefix: string,
    opts?: StoreCallOptions,
  ): Promise<Map<string, T>>;
} {
  return {
    async rememberCall<T>(input: RememberCallInput<T>, opts: StoreCallOptions = {}): Promise<T> {
      const op = 'rememberCall';
      opts.signal?.throwIfAborted();
      const key = requireId(op, 'idempotencyKey', input.idempotencyKey);
      const values = {
        idempotency_key: key,
        run_id: requireId(op, 'runId', input.runId),
        result: encodeJson(op, 'result', input.result),
        created_at: now(),
      };
      // The row can only vanish between the two statements if someone deletes memos concurrently.
      for (let attempt = 0; attempt < 3; attempt++) {
        const inserted = await db
          .insertInto('call_results')
          .values(values)
          .onConflict((oc) => oc.column('idempotency_key').doNothing())
          .returning('result')
          .executeTakeFirst();
        if (inserted) return inserted.result as T;
        const existing = await db
          .selectFrom('call_results')
          .select('result')
          .where('idempotency_key', '=', key)
          .executeTakeFirst();
        if (existing) return existing.result as T;
        opts.signal?.throwIfAborted();
      }
      throw new Error(`rememberCall: the memo for "${key}" was deleted while it was being written`);
    },

    async recallCall<T = unknown>(
      idempotencyKey: string,
      opts: StoreCallOptions = {},
    ): Promise<T | undefined> {
      opts.signal?.throwIfAborted();
      const key = requireId('recallCall', 'idempotencyKey', idempotencyKey);
      const row = await db
        .selectFrom('call_results')
        .select('result')
        .where('idempotency_key', '=', key)
        .executeTakeFirst();
      return row ? (row.result as T) : undefined;
    },

    async recallCalls<T = unknown>(keys: readonly string[], opts: StoreCallOptions = {}) {
      const unique = [...new Set(keys.map((k, i) => requireId('recallCalls', `keys[${i}]`, k)))];
      const entries: [string, T][] = [];
      for (const part of chunk(unique, KEY_CHUNK)) {
        opts.signal?.throwIfAborted();
        const rows = await db
          .selectFrom('call_results')
          .select(['idempotency_key', 'result'])
          .where('idempotency_key', 'in', part)
          .execute();
        for (const row of rows) entries.push([row.idempotency_key, row.result as T]);
      }
      return Object.fromEntries(entries) as Record<string, T>;
    },

    async recallCallsByPrefix<T = unknown>(runId: string, prefix: string, opts: StoreCallOptions = {}) {
      opts.signal?.throwIfAborted();
      const id = requireId('recallCallsByPrefix', 'runId', runId);
      const rows = await db
        .selectFrom('call_results')
        .select(['idempotency_key', 'result'])
        .where('run_id', '=', id)
        .where(sql<boolean>`starts_with(idempotency_key, ${prefix})`)
        .execute();
      return new Map(rows.map((r) => [r.idempotency_key, r.result as T]));
    },
  };
}
