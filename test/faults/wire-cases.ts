import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompatFlavor, ProviderKind } from '../../src/core/engine-types.ts';
import { type ClassifyContext, classifyError } from '../../src/engines/faults/classify-error.ts';
import type { Fault, FaultKind } from '../../src/core/fault.ts';
import {
  closedPort,
  type FixtureReply,
  startWireFixtureServer,
  type WireFixtureServer,
} from '../support/wire-fixture-server.ts';
import type { CallOptions, FailedCall } from './sdk-calls.ts';
import { ANTHROPIC_KEY, GEMINI_KEY, OPENAI_KEY } from './sdk-calls.ts';

/** The rows of provider-wire-facts §6.4, by the fault kind each produces. */
export type Row = FaultKind;

/** Every field is asserted: one left out must be absent from the fault. */
export interface Expected {
  readonly kind: FaultKind;
  readonly status?: number;
  readonly retryAfterMs?: number;
  readonly retryAfterCappedFromMs?: number;
  readonly disableForMs?: number;
  readonly disableReason?: string;
  readonly requestId?: string;
  readonly code?: string;
  /** The scrubbed, one-line message must match. */
  readonly message: RegExp;
}

export interface WireCase {
  /** Unique; also the fixture route. */
  readonly name: string;
  /** Served by the fixture; omit for the socket-less targets below. */
  readonly reply?: FixtureReply;
  /** `refused`: a closed 127.0.0.1 port. `notfound`: a resolver that answers ENOTFOUND. */
  readonly target?: 'refused' | 'notfound';
  readonly call?: Pick<CallOptions, 'stream' | 'timeout' | 'apiKey'> & {
    /** Abort the call's signal the moment the fixture receives the request. */
    readonly abortOnArrival?: boolean;
  };
  /** Extra classification context (a fixed `now`, `timedOut`, `callerAborted`, …). */
  readonly ctx?: Partial<Omit<ClassifyContext, 'provider'>>;
  readonly expect: Expected;
  /** Classify from the SDK error alone, without the adapter-captured headers/bodyText. */
  readonly noCapture?: boolean;
  /** Strings that must not appear anywhere in the fault (keys). */
  readonly secrets?: readonly string[];
}

export interface SuiteOptions {
  readonly provider: ProviderKind;
  readonly flavor?: CompatFlavor;
  /** Builds the SDK base URL from the fixture route URL (OpenAI wants `/v1` appended). */
  readonly baseURL: (routeUrl: string) => string;
  readonly call: (baseURL: string, opts: CallOptions) => Promise<FailedCall>;
  /**
   * Pass the adapter-captured headers/bodyText in the context. `both` classifies twice (with and
   * without) and requires the same fault: the SDK error alone must be enough.
   */
  readonly captured: 'always' | 'both';
}

const ALL_KEYS = [ANTHROPIC_KEY, OPENAI_KEY, GEMINI_KEY];

/** A dispatcher whose resolver says ENOTFOUND, so no real DNS query leaves the machine. */
async function notFoundDispatcher(): Promise<unknown> {
  const key = Symbol.for('undici.globalDispatcher.1');
  let global = (globalThis as Record<symbol, unknown>)[key];
  if (!global) {
    // The global dispatcher is created on first use: make one harmless local request.
    await fetch(`http://127.0.0.1:${await closedPort()}/`).catch(() => undefined);
    global = (globalThis as Record<symbol, unknown>)[key];
  }
  const Agent = (global as { constructor: new (opts: unknown) => unknown }).constructor;
  return new Agent({
    connect: {
      lookup: (hostname: string, _opts: unknown, cb: (err: Error) => void) => {
        cb(
          Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
            code: 'ENOTFOUND',
            syscall: 'getaddrinfo',
            hostname,
          }),
        );
      },
    },
  });
}

export function assertFault(fault: Fault, want: Expected, secrets: readonly string[]): void {
  expect(fault.kind).toBe(want.kind);
  expect(fault.status).toBe(want.status);
  expect(fault.retryAfterMs).toBe(want.retryAfterMs);
  expect(fault.retryAfterCappedFromMs).toBe(want.retryAfterCappedFromMs);
  expect(fault.disableForMs).toBe(want.disableForMs);
  expect(fault.disableReason).toBe(want.disableReason);
  expect(fault.requestId).toBe(want.requestId);
  expect(fault.code).toBe(want.code);
  expect(fault.message).toMatch(want.message);
  expect(fault.message).not.toMatch(/[\r\n]/);
  expect(fault.message.length).toBeLessThanOrEqual(300);
  expect(Object.isFrozen(fault)).toBe(true);
  const all = JSON.stringify(fault);
  for (const secret of [...ALL_KEYS, ...secrets]) expect(all).not.toContain(secret);
}

/** Registers one `it` per case, all against one fixture server. */
export function describeWireCases(title: string, suite: SuiteOptions, cases: readonly WireCase[]): void {
  describe(title, () => {
    let server: WireFixtureServer;
    let refusedPort: number;
    let dispatcher: unknown;

    beforeAll(async () => {
      const routes: Record<string, FixtureReply> = {};
      for (const c of cases) if (c.reply) routes[c.name] = c.reply;
      server = await startWireFixtureServer(routes);
      refusedPort = await closedPort();
      dispatcher = await notFoundDispatcher();
    });
    afterAll(async () => {
      await server.close();
      await (dispatcher as { close?: () => Promise<void> } | undefined)?.close?.();
    });

    const names = new Set<string>();
    for (const c of cases) {
      if (names.has(c.name)) throw new Error(`duplicate wire case ${c.name}`);
      names.add(c.name);
    }

    it.each(cases.map((c) => [`${c.expect.kind} ← ${c.name}`, c] as const))('%s', async (_label, c) => {
      const routeUrl =
        c.target === 'refused'
          ? `http://127.0.0.1:${refusedPort}/${c.name}`
          : c.target === 'notfound'
            ? `http://api.breakwater.invalid/${c.name}`
            : server.url(c.name);
      const controller = new AbortController();
      if (c.call?.abortOnArrival) void server.nextRequest(c.name).then(() => controller.abort());
      const failed = await suite.call(suite.baseURL(routeUrl), {
        ...(c.call?.stream ? { stream: true } : {}),
        ...(c.call?.timeout !== undefined ? { timeout: c.call.timeout } : {}),
        ...(c.call?.apiKey ? { apiKey: c.call.apiKey } : {}),
        ...(c.call?.abortOnArrival ? { signal: controller.signal } : {}),
        ...(c.target === 'notfound' ? { fetchOptions: { dispatcher } } : {}),
      });

      const base: ClassifyContext = {
        provider: suite.provider,
        now: Date.now(),
        ...(suite.flavor ? { flavor: suite.flavor } : {}),
        ...c.ctx,
      };
      const withCapture: ClassifyContext = c.noCapture
        ? base
        : {
            ...base,
            ...(failed.headers ? { headers: failed.headers } : {}),
            ...(failed.bodyText !== undefined ? { bodyText: failed.bodyText } : {}),
            ...(failed.status !== undefined ? { status: failed.status } : {}),
          };
      const fault = classifyError(failed.error, withCapture);
      assertFault(fault, c.expect, c.secrets ?? []);
      if (suite.captured === 'both') expect(classifyError(failed.error, base)).toEqual(fault);
      if (c.reply && !('action' in c.reply)) expect(server.requests(c.name)).toHaveLength(1);
    });
  });
}
