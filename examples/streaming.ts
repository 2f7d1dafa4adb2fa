/**
 * A streamed one-off call that survives a dying provider: the Anthropic primary's stream is cut after its first
 * chunks, and the answer continues on the next Anthropic endpoint from the partial text (a continuation), so the
 * reader sees one answer, never a doubled one. Run it: `npx tsx examples/streaming.ts` (no network, no API key:
 * the provider emulator stands in).
 */
import { pathToFileURL } from 'node:url';
import { startEmulator } from '../src/entries/emulator-entry.ts';
import { createSupervisor, type StreamEvent, type Turn } from '../src/index.ts';

/**
 * Runs the example, writing the text as it streams through `write` and the events' news through `print`.
 *
 * @example
 * ```ts
 * const { turn, text } = await main({ write: () => {}, print: () => {} });
 * text === turn.answer.text; // true
 * ```
 */
export async function main(
  options: { write?: (text: string) => void; print?: (line: string) => void; signal?: AbortSignal } = {},
): Promise<{ turn: Turn; text: string; events: StreamEvent[] }> {
  const write = options.write ?? ((text: string) => process.stdout.write(text));
  const print = options.print ?? ((line: string) => console.log(line));
  const emulator = await startEmulator({ profile: { seed: 9, streamChunkChars: 24 } });
  // The primary key's stream breaks after two text chunks (the socket drops mid-answer), once.
  emulator.addFault({
    kind: 'stream_cut',
    match: { key: 'sk-ant-example-stream-1' },
    count: 1,
    afterChunks: 2,
  });
  const supervisor = createSupervisor({
    endpoints: [
      {
        id: 'claude-a',
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        apiKey: 'sk-ant-example-stream-1',
        baseURL: emulator.baseURL('anthropic'),
      },
      {
        id: 'claude-b',
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        apiKey: 'sk-ant-example-stream-2',
        baseURL: emulator.baseURL('anthropic'),
      },
    ],
    chains: { premium: ['claude-a', 'claude-b'] },
  });
  try {
    const stream = supervisor.stream({
      chain: 'premium',
      messages: [{ role: 'user', content: 'Summarize the overnight FX moves.' }],
      ...(options.signal ? { signal: options.signal } : {}),
    });
    let text = '';
    const events: StreamEvent[] = [];
    for await (const e of stream) {
      events.push(e);
      if (e.type === 'endpoint') {
        text = text.slice(0, e.kept);
        if (e.mode !== 'start') {
          const from = e.sources.map((s) => `${s.chars} chars from ${s.endpointId}`).join(', ');
          print(
            `\n[${e.mode} on ${e.endpointId}: kept ${e.kept}${from ? ` (${from})` : ''}, withdrew ${e.withdrawn}]`,
          );
        }
      } else if (e.type === 'text') {
        text += e.text;
        write(e.text);
      } else if (e.type === 'fault') {
        print(`\n[fault on ${e.endpointId} after ${e.afterChars} chars: ${e.fault.kind}]`);
      }
    }
    const turn = await stream.turn;
    print(`\n${turn.outcome}: ${turn.attempts} upstream calls, ${turn.faults.length} fault(s)`);
    return { turn, text, events };
  } finally {
    await supervisor.stop();
    await emulator.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
