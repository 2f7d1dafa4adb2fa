import type { Command } from 'commander';
import { type Clock, systemClock } from '../../clock/clock.ts';
import { startEmulator } from '../../emulator/emulator-server.ts';
import type { EmulatorProfile } from '../../emulator/emulator-types.ts';
import { createEngine } from '../../engines/create-engine.ts';
import type { EndpointConfig } from '../../engines/endpoint-config.ts';
import type { Engine, EngineRequest, EngineResult, RateLimitWindow } from '../../core/engine-types.ts';
import { type Fault, isEngineFaultError, isSwappableFault, isTransientFault } from '../../core/fault.ts';
import { CliError } from '../cli-error.ts';
import { alignRows, oneLine, type Print, printToStdout } from '../cli-output.ts';
import { listenForStop } from '../stop-signal.ts';
import { describeUsage } from '../../core/token-usage.ts';

/*
 * `breakwater start` for now: the engine adapter end to end on the built-in emulator. The round
 * runner replaces it; until then it proves on a fresh machine (no network, no key) that a 429 comes
 * back as a classified fault and that a second endpoint answers the same logical call.
 */

/** The demo keys: fake, known only to the built-in emulator. */
const PRIMARY_KEY = 'sk-ant-breakwater-demo-primary-0001';
const BACKUP_KEY = 'sk-breakwater-demo-backup-0002';

/** How long the built-in 429 tells the client to wait, in ms. */
export const START_RETRY_AFTER_MS = 2_000;

/**
 * The built-in emulator profile of `breakwater start`: two demo keys with a small quota, and one
 * fault rule that answers the first Anthropic call with a 429.
 */
export const START_PROFILE: EmulatorProfile = Object.freeze({
  seed: 1,
  keys: [
    { alias: 'demo-primary', key: PRIMARY_KEY },
    { alias: 'demo-backup', key: BACKUP_KEY },
  ],
  defaultQuotas: { rpm: 50, tpm: 40_000 },
  faults: [
    {
      id: 'first-anthropic-call-429',
      kind: 'rate_limit',
      match: { flavor: 'anthropic' },
      count: 1,
      retryAfterMs: START_RETRY_AFTER_MS,
    },
  ],
}) as EmulatorProfile;

/** Options of {@link runStart}. */
export interface StartOptions {
  /** Where the report lines go. Default: stdout. */
  readonly print?: Print;
  /** Cancels the calls and closes the emulator early. */
  readonly signal?: AbortSignal;
  /** Time source of the emulator and the engines. Default: the system clock. */
  readonly clock?: Clock;
}

/** What {@link runStart} saw: the classified 429 and the answer of the second endpoint. Plain data. */
export interface StartReport {
  /** The fault the first endpoint's 429 was classified as. */
  readonly fault: Fault;
  /** The second endpoint's answer to the same logical call. */
  readonly answer: EngineResult;
  /** HTTP outcomes the emulator counted, by status (`{ "429": 1, "200": 1 }`). */
  readonly emulatorByStatus: Readonly<Record<string, number>>;
}

function describeWindow(name: string, w: RateLimitWindow | undefined, now: number): string | undefined {
  if (!w || (w.limit === undefined && w.remaining === undefined)) return undefined;
  const left = `${w.remaining ?? '?'}/${w.limit ?? '?'} left`;
  const reset =
    w.resetAt !== undefined ? `, full again in ${Math.max(0, Math.ceil((w.resetAt - now) / 1000))} s` : '';
  return `${name} ${left}${reset}`;
}

function describeFaultMeaning(fault: Fault): string {
  if (isTransientFault(fault.kind)) {
    const after = fault.retryAfterMs !== undefined ? ` after ${fault.retryAfterMs} ms` : ' later';
    return `transient: this endpoint may answer again${after}; another engine may answer now`;
  }
  if (isSwappableFault(fault.kind)) return 'this endpoint cannot answer for now; another engine may';
  return 'no engine swap fixes this; the call ends with this error';
}

async function expectFault(engine: Engine, request: EngineRequest): Promise<Fault> {
  try {
    const result = await engine.call(request);
    throw new CliError(
      `the built-in 429 did not happen (${result.endpoint.id} answered); this is a bug in breakwater, please report it`,
    );
  } catch (e) {
    if (isEngineFaultError(e)) return e.fault;
    throw e;
  }
}

/**
 * Runs the adapter demo: starts the emulator in-process with {@link START_PROFILE}, creates an
 * Anthropic-wire and an OpenAI-wire engine against it, sends one logical call to the first (which
 * answers 429), prints the classified fault, sends the same call to the second, prints its answer
 * (endpoint, model, usage, rate-limit state), and closes everything.
 *
 * This hand-written "try the next endpoint" is a demo, not breakwater's retry policy: the resilience
 * core (breakers, cooldowns, fallback chains) does that for real.
 *
 * @example
 * ```ts
 * const report = await runStart({ print: () => {} });
 * report.fault.kind; // 'rate_limited'
 * report.answer.endpoint.id; // 'backup-openai'
 * ```
 */
export async function runStart(options: StartOptions = {}): Promise<StartReport> {
  const print = options.print ?? printToStdout;
  const clock = options.clock ?? systemClock;
  options.signal?.throwIfAborted();
  const emulator = await startEmulator({ profile: START_PROFILE, clock });
  try {
    const configs: EndpointConfig[] = [
      {
        id: 'primary-anthropic',
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        apiKey: PRIMARY_KEY,
        baseURL: emulator.baseURL('anthropic'),
      },
      {
        id: 'backup-openai',
        provider: 'openai',
        model: 'gpt-4o-mini',
        apiKey: BACKUP_KEY,
        baseURL: emulator.baseURL('openai'),
      },
    ];
    const [primary, backup] = configs.map((c) => createEngine(c, { clock })) as [Engine, Engine];

    print(
      'breakwater start: one call through the engine adapter, on the built-in emulator (no network, no key)',
    );
    print(
      `emulator  ${emulator.controlURL} (control); rule "first-anthropic-call-429": ` +
        `the first Anthropic call answers 429 with retry-after ${START_RETRY_AFTER_MS} ms`,
    );
    const engineRows = alignRows(
      [primary, backup].map((e) => [
        e.endpoint.id,
        `${e.endpoint.provider.padEnd(9)} ${e.endpoint.model.padEnd(18)} key fingerprint ${e.endpoint.keyFingerprint}`,
      ]),
    );
    for (const [i, row] of engineRows.entries()) print(`${i === 0 ? 'engines' : '       '}   ${row}`);

    const request: EngineRequest = {
      system: 'You are the operations analyst of a multi-agent team.',
      messages: [{ role: 'user', content: 'Summarize the overnight incidents in two sentences.' }],
      maxTokens: 200,
      idempotencyKey: 'start/call-1',
      ...(options.signal ? { signal: options.signal } : {}),
    };

    print('');
    print(`call "${request.idempotencyKey}" → ${primary.endpoint.id}`);
    const fault = await expectFault(primary, request);
    const faultRows: Array<[string, string]> = [
      ['fault', `${fault.kind}${fault.status !== undefined ? ` (HTTP ${fault.status})` : ''}`],
      ['retry-after', fault.retryAfterMs !== undefined ? `${fault.retryAfterMs} ms` : 'not given'],
      [
        'provider',
        [fault.provider, fault.code && `code ${fault.code}`, fault.requestId && `request ${fault.requestId}`]
          .filter(Boolean)
          .join(', '),
      ],
      ['message', oneLine(fault.message, 100)],
      ['meaning', describeFaultMeaning(fault)],
    ];
    for (const line of alignRows(faultRows, '  ')) print(line);

    print(`call "${request.idempotencyKey}" → ${backup.endpoint.id} (the next endpoint)`);
    const answer = await backup.call(request);
    const now = clock.now();
    const limits = [
      describeWindow('requests', answer.rateLimit.requests, now),
      describeWindow('tokens', answer.rateLimit.tokens, now),
    ].filter((s): s is string => s !== undefined);
    const answerRows: Array<[string, string]> = [
      ['answer', oneLine(answer.text, 100)],
      [
        'endpoint',
        `${answer.endpoint.id} (${answer.endpoint.provider}, key fingerprint ${answer.endpoint.keyFingerprint})`,
      ],
      ['model', answer.model],
      ['stop', answer.stopReason],
      ['usage', describeUsage(answer.usage)],
      ['rate limit', limits.length > 0 ? limits.join('; ') : 'not reported'],
      ['latency', `${Math.round(answer.latencyMs)} ms`],
    ];
    for (const line of alignRows(answerRows, '  ')) print(line);

    const stats = emulator.stats();
    const byStatus = Object.entries(stats.byStatus)
      .map(([status, n]) => `${n} × ${status}`)
      .join(', ');
    print('');
    print(`emulator  ${stats.totalCalls} calls: ${byStatus}`);
    print(`done: the 429 was classified as ${fault.kind} and ${answer.endpoint.id} answered the same call`);
    return Object.freeze({ fault, answer, emulatorByStatus: Object.freeze({ ...stats.byStatus }) });
  } finally {
    await emulator.close();
  }
}

/**
 * Registers `breakwater start`.
 *
 * @example
 * ```ts
 * registerStartCommand(new Command('breakwater'));
 * ```
 */
export function registerStartCommand(program: Command): Command {
  return program
    .command('demo')
    .description(
      'A tour of the engine adapter on the built-in emulator: a 429 classified as rate_limited, then a second endpoint answers. Needs no network and no API key.',
    )
    .addHelpText(
      'after',
      '\nStarts the emulator in-process with a built-in profile, calls an Anthropic-wire endpoint (429),\n' +
        'prints the classified fault, calls an OpenAI-wire endpoint, prints its answer, closes everything.',
    )
    .action(async () => {
      const stop = listenForStop();
      try {
        await runStart({ signal: stop.signal });
      } catch (e) {
        const got = stop.received();
        if (got) throw new CliError(`interrupted by ${got}; nothing was left running`, { exitCode: 130 });
        throw e;
      } finally {
        stop.dispose();
      }
    });
}
