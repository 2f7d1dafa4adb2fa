import type { CannedReply, FixtureReply } from './wire-fixture-server.ts';

/*
 * An OpenAI-compatible server that sends no usage at all (an older vLLM, a llama.cpp server, a proxy): its chat
 * completion has no `usage`, and its stream ignores `stream_options.include_usage` (no usage chunk). Byte-exact
 * bodies for `startWireFixtureServer`.
 */

export const NO_USAGE_ANSWER = 'Rates held; the dollar eased after the data.';

/** `POST /chat/completions` without `stream`: a completion with no `usage` field. */
export const noUsageCompletion: CannedReply = {
  status: 200,
  body: {
    id: 'chatcmpl-nousage-1',
    object: 'chat.completion',
    created: 1_772_409_600,
    model: 'llama3.1',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: NO_USAGE_ANSWER },
        finish_reason: 'stop',
        logprobs: null,
      },
    ],
  },
};

const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-nousage-2',
    object: 'chat.completion.chunk',
    created: 1_772_409_600,
    model: 'llama3.1',
    choices: [{ index: 0, delta, finish_reason: finish }],
  })}\n\n`;

/** The same answer streamed: content deltas, the finish, `[DONE]`; no usage chunk. */
export const noUsageStream: CannedReply = {
  sse: [
    chunk({ role: 'assistant', content: '' }),
    chunk({ content: 'Rates held; ' }),
    chunk({ content: 'the dollar eased after the data.' }),
    chunk({}, 'stop'),
    'data: [DONE]\n\n',
  ],
};

/** Answers a streamed request with {@link noUsageStream}, any other with {@link noUsageCompletion}. */
export const noUsageServer: FixtureReply = (request) =>
  (JSON.parse(request.body || '{}') as { stream?: boolean }).stream === true
    ? noUsageStream
    : noUsageCompletion;
