/**
 * Every emulator fault kind on every provider wire format, through the real SDKs and the engine
 * adapter: what the emulator sends (HTTP status, or what it does to the connection) and the fault
 * kind breakwater classifies it as. The README's fault table is this program's output.
 *
 * Run it: `npx tsx examples/emulator-fault-matrix.ts` (no network, no API key; about two seconds).
 */
import { pathToFileURL } from 'node:url';
import { sleep, systemClock } from '../src/clock/clock.ts';
import { createVirtualClock } from '../src/clock/virtual-clock.ts';
import {
  type CallRecord,
  EMULATOR_FAULT_KINDS,
  EMULATOR_FLAVORS,
  type EmulatorFaultKind,
  type EmulatorFlavor,
} from '../src/emulator/emulator-types.ts';
import { type Emulator, startEmulator } from '../src/emulator/emulator-server.ts';
import { createEngine } from '../src/engines/create-engine.ts';
import type { EndpointConfig } from '../src/engines/endpoint-config.ts';
import { isEngineFaultError } from '../src/core/fault.ts';

/**
 * How long a hang or a stall may last before the adapter's deadline cuts it, in simulated ms. The
 * matrix runs on a virtual clock: a deadline passes at once when only it is left to wait for, and never
 * while a response is on its way, so a slow or loaded machine gives the same table.
 */
const DEADLINE_MS = 30_000;
const KEY = 'sk-matrix-example-key-000000000001';

/** One endpoint per flavor, on the emulator's base URL. */
function endpointFor(flavor: EmulatorFlavor, baseURL: string): EndpointConfig {
  const common = { id: flavor, baseURL, headersTimeoutMs: DEADLINE_MS, idleTimeoutMs: DEADLINE_MS };
  switch (flavor) {
    case 'anthropic':
      return { ...common, provider: 'anthropic', model: 'claude-sonnet-4-6', apiKey: KEY };
    case 'openai':
      return { ...common, provider: 'openai', model: 'gpt-4o-mini', apiKey: KEY };
    case 'gemini':
      return { ...common, provider: 'gemini', model: 'gemini-2.5-flash', apiKey: KEY };
    case 'gemini-compat':
      return { ...common, provider: 'openai-compatible', flavor, model: 'gemini-2.5-flash', apiKey: KEY };
    case 'vllm':
      return { ...common, provider: 'openai-compatible', flavor, model: 'qwen2.5-7b' };
    case 'ollama':
      return { ...common, provider: 'openai-compatible', flavor, model: 'llama3.1' };
  }
}

/** The emulator's record of the last call on `flavor`. A held call (hang, stall) is recorded only after
 * the client gave up and the socket closed, a moment after the adapter already rejected. */
async function recordedCall(emulator: Emulator, flavor: EmulatorFlavor): Promise<CallRecord | undefined> {
  // Bounded far above any load: a broken emulator ends the example instead of hanging it.
  for (let i = 0; i < 500; i++) {
    const last = emulator
      .stats()
      .calls.filter((c) => c.flavor === flavor)
      .at(-1);
    if (last) return last;
    await sleep(systemClock, 20);
  }
  return undefined;
}

/** What one fault kind did on one flavor. */
export interface MatrixCell {
  /** The HTTP status the emulator answered, or `reset`/`refused`/`hang`/`stall`. */
  readonly sent: string;
  /** The adapter's classification, or `answered` when the call succeeded. */
  readonly classified: string;
  /** The fault's `retryAfterMs`, when it had one. */
  readonly retryAfterMs?: number;
}

/** One row per emulator fault kind a plain (non-streamed) call can meet. */
export type FaultMatrix = ReadonlyArray<{
  readonly kind: EmulatorFaultKind;
  readonly cells: Readonly<Record<EmulatorFlavor, MatrixCell>>;
}>;

/** Fault kinds that act on a non-streaming call (the `stream_*` kinds act on streams only: README "Fault kinds"). */
export const MATRIX_KINDS: readonly EmulatorFaultKind[] = EMULATOR_FAULT_KINDS.filter(
  (k) => !k.startsWith('stream_'),
);

/**
 * Builds the matrix: a fresh emulator per fault kind, one call per flavor with that fault armed.
 *
 * @example
 * ```ts
 * const matrix = await buildFaultMatrix();
 * matrix.find((r) => r.kind === 'rate_limit')?.cells.openai; // { sent: '429', classified: 'rate_limited', retryAfterMs: 1000 }
 * ```
 */
export async function buildFaultMatrix(): Promise<FaultMatrix> {
  const rows: Array<{ kind: EmulatorFaultKind; cells: Record<EmulatorFlavor, MatrixCell> }> = [];
  for (const kind of MATRIX_KINDS) {
    const clock = createVirtualClock();
    const emulator = await startEmulator({ profile: { seed: 11 }, clock });
    const cells = {} as Record<EmulatorFlavor, MatrixCell>;
    try {
      for (const flavor of EMULATOR_FLAVORS) {
        emulator.clearFaults();
        // connection_refused closes the listener at once, so it is armed right before its own call.
        emulator.addFault({ kind, match: { flavor }, count: 1 });
        const engine = createEngine(endpointFor(flavor, emulator.baseURL(flavor)), { clock });
        let classified = 'answered';
        let retryAfterMs: number | undefined;
        try {
          await engine.call({
            messages: [{ role: 'user', content: 'ping' }],
            maxTokens: 32,
            idempotencyKey: `matrix/${kind}/${flavor}`,
          });
        } catch (e) {
          if (!isEngineFaultError(e)) throw e;
          classified = e.fault.kind;
          retryAfterMs = e.fault.retryAfterMs;
        }
        // A refused connection never reaches the emulator; every other call is recorded once it ends.
        const last = kind === 'connection_refused' ? undefined : await recordedCall(emulator, flavor);
        cells[flavor] = {
          sent: last ? String(last.status) : 'refused',
          classified,
          ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
        };
      }
    } finally {
      await emulator.close();
      clock.stop();
    }
    rows.push({ kind, cells });
  }
  return rows;
}

/** The matrix as a Markdown table. */
export function formatFaultMatrix(matrix: FaultMatrix): string {
  const cell = (c: MatrixCell) =>
    `${c.sent} → ${c.classified}${c.retryAfterMs !== undefined ? ` (${c.retryAfterMs} ms)` : ''}`;
  const lines = [
    `| emulator fault | ${EMULATOR_FLAVORS.join(' | ')} |`,
    `|---|${EMULATOR_FLAVORS.map(() => '---').join('|')}|`,
    ...matrix.map((r) => `| \`${r.kind}\` | ${EMULATOR_FLAVORS.map((f) => cell(r.cells[f])).join(' | ')} |`),
  ];
  return lines.join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(formatFaultMatrix(await buildFaultMatrix()));
}
