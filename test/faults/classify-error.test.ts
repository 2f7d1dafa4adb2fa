import {
  APIConnectionTimeoutError,
  APIUserAbortError,
  InternalServerError,
  APIError as AnthropicAPIError,
} from '@anthropic-ai/sdk';
import { APIError as OpenAIAPIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { StreamCutError } from '../../src/engines/engine-call.ts';
import { classifyError } from '../../src/engines/faults/classify-error.ts';
import { EngineFaultError, isSwappableFault, isTransientFault } from '../../src/core/fault.ts';

// Edge cases the wire tables cannot reach: objects shaped like other SDK majors, the context flags
// on their own, and inputs that must never make the classifier throw.

const now = Date.parse('2026-11-29T00:00:00Z');
const anthropicBody = (type: string, message: string) => ({
  type: 'error',
  error: { type, message },
  request_id: 'req_body',
});

describe('classifyError — shapes from other SDK majors (never only instanceof)', () => {
  it('0.x: a 529 arrives as a plain InternalServerError; status decides → overloaded', () => {
    const err = new InternalServerError(
      529,
      anthropicBody('overloaded_error', 'Overloaded'),
      undefined,
      new Headers(),
    );
    expect(err.constructor.name).toBe('InternalServerError');
    const fault = classifyError(err, { provider: 'anthropic', now });
    expect(fault).toMatchObject({
      kind: 'overloaded',
      status: 529,
      code: 'overloaded_error',
      requestId: 'req_body',
    });
  });

  it('type overloaded_error decides even under another status', () => {
    const err = new InternalServerError(
      500,
      anthropicBody('overloaded_error', 'Overloaded'),
      undefined,
      new Headers(),
    );
    expect(classifyError(err, { provider: 'anthropic', now }).kind).toBe('overloaded');
  });

  it('a structural look-alike with no SDK class at all (0.x, duplicate copy) classifies the same', () => {
    const lookAlike = {
      name: 'Error',
      status: 529,
      type: 'overloaded_error',
      message: '529 {"type":"error"}',
      headers: { 'request-id': 'req_plain', 'retry-after': '4' },
    };
    expect(classifyError(lookAlike, { provider: 'anthropic', now })).toEqual({
      kind: 'overloaded',
      provider: 'anthropic',
      status: 529,
      code: 'overloaded_error',
      requestId: 'req_plain',
      retryAfterMs: 4_000,
      message: '529 {"type":"error"}',
    });
  });

  it('0.x has no errorCode: error.details.error_code is read from the body', () => {
    const body = {
      type: 'error',
      error: {
        type: 'rate_limit_error',
        message: 'cap',
        details: { error_code: 'enforced_spend_limit_reached' },
      },
    };
    const err = { status: 429, error: body, message: `429 ${JSON.stringify(body)}`, headers: new Headers() };
    expect(classifyError(err, { provider: 'anthropic', now })).toMatchObject({
      kind: 'credit_exhausted',
      code: 'enforced_spend_limit_reached',
    });
  });

  it('an OpenAI Responses-API stream error (no status) is read by its code', () => {
    const err = new OpenAIAPIError(
      undefined,
      { code: 'rate_limit_exceeded', message: 'Rate limit reached. Please try again in 2s.' },
      undefined,
      undefined,
    );
    expect(classifyError(err, { provider: 'openai', now })).toMatchObject({
      kind: 'rate_limited',
      retryAfterMs: 2_000,
      code: 'rate_limit_exceeded',
    });
  });

  it('a stream error with an unknown type is a server error (the request was accepted)', () => {
    const err = new AnthropicAPIError(
      undefined,
      anthropicBody('mystery_error', 'boom'),
      undefined,
      new Headers(),
      'mystery_error' as never,
    );
    expect(classifyError(err, { provider: 'anthropic', now })).toMatchObject({
      kind: 'server_error',
      code: 'mystery_error',
      message: 'boom',
    });
  });
});

describe('classifyError — context flags', () => {
  it('timedOut wins over an SDK user-abort', () => {
    const fault = classifyError(new APIUserAbortError(), {
      provider: 'anthropic',
      now,
      timedOut: 'idle',
      callerAborted: true,
    });
    expect(fault.kind).toBe('timeout');
  });

  it('callerAborted makes a status-less error cancelled', () => {
    const abort = new DOMException('This operation was aborted', 'AbortError');
    expect(classifyError(abort, { provider: 'gemini', now, callerAborted: true }).kind).toBe('cancelled');
  });

  it("without flags, a bare AbortError is genai's own timeout for Gemini and the caller elsewhere", () => {
    const abort = new DOMException('This operation was aborted', 'AbortError');
    expect(classifyError(abort, { provider: 'gemini', now }).kind).toBe('timeout');
    expect(classifyError(abort, { provider: 'openai', now }).kind).toBe('cancelled');
  });

  it('APIConnectionTimeoutError is a timeout although it extends APIConnectionError', () => {
    expect(classifyError(new APIConnectionTimeoutError(), { provider: 'anthropic', now }).kind).toBe(
      'timeout',
    );
  });

  it('AbortSignal.timeout reasons and undici header timeouts are timeouts', () => {
    expect(
      classifyError(new DOMException('The operation timed out.', 'TimeoutError'), { provider: 'openai', now })
        .kind,
    ).toBe('timeout');
    const undici = new TypeError('fetch failed', {
      cause: Object.assign(new Error('Headers Timeout Error'), { code: 'UND_ERR_HEADERS_TIMEOUT' }),
    });
    expect(classifyError(undici, { provider: 'gemini', now })).toMatchObject({
      kind: 'timeout',
      code: 'UND_ERR_HEADERS_TIMEOUT',
    });
  });

  it('an HTTP status outranks the flags: the answer arrived', () => {
    const err = new InternalServerError(503, anthropicBody('api_error', 'busy'), undefined, new Headers());
    expect(classifyError(err, { provider: 'anthropic', now, timedOut: 'idle' }).kind).toBe('overloaded');
  });

  it('copies endpointId and provider', () => {
    expect(
      classifyError(new Error('x'), {
        provider: 'openai-compatible',
        flavor: 'vllm',
        now,
        endpointId: 'local-vllm',
      }),
    ).toMatchObject({
      provider: 'openai-compatible',
      endpointId: 'local-vllm',
    });
  });
});

describe('classifyError — statuses outside the table', () => {
  const make = (status: number) =>
    new InternalServerError(status, undefined, `${status} status code (no body)`, new Headers());
  it.each([
    [599, 'server_error'],
    [501, 'server_error'],
    [409, 'server_error'],
    [408, 'timeout'],
    [418, 'bad_request'],
    [431, 'bad_request'],
    [499, 'cancelled'],
  ] as const)('%d → %s', (status, kind) => {
    expect(classifyError(make(status), { provider: 'anthropic', now }).kind).toBe(kind);
  });
});

describe('classifyError — never throws, always one short scrubbed line', () => {
  const hostile = new Proxy(
    {},
    {
      get() {
        throw new Error('trap');
      },
      getPrototypeOf() {
        throw new Error('trap');
      },
    },
  );
  const circular: Record<string, unknown> = { message: 'loop' };
  circular.self = circular;
  circular.cause = circular;

  it.each([
    ['null', null],
    ['undefined', undefined],
    ['a string', 'something broke'],
    ['a number', 42],
    ['a symbol', Symbol('s')],
    ['a hostile proxy', hostile],
    ['a circular object', circular],
    ['an empty object', {}],
    ['an array', [1, 2, 3]],
  ])('%s → bad_request', (_label, value) => {
    const fault = classifyError(value, { provider: 'openai', now });
    expect(fault.kind).toBe('bad_request');
    expect(typeof fault.message).toBe('string');
    expect(fault.message.length).toBeGreaterThan(0);
    expect(fault.message).not.toMatch(/[\r\n]/);
  });

  it('an unknown object that is clearly a connection error → network', () => {
    const sys = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' });
    expect(classifyError(sys, { provider: 'anthropic', now })).toMatchObject({
      kind: 'network',
      code: 'ECONNRESET',
    });
    expect(classifyError(new Error('socket hang up'), { provider: 'openai', now }).kind).toBe('network');
  });

  it('a client-side SDK validation error is a bad request', () => {
    const fault = classifyError(
      new Error('Streaming is required for operations that may take longer than 10 minutes.'),
      { provider: 'anthropic', now },
    );
    expect(fault.kind).toBe('bad_request');
  });

  it('sanitizes key shapes, URL passwords and auth headers where the text enters, then truncates to one line', () => {
    const text = `bad\nkey sk-ant-api03-${'a'.repeat(40)}WXYZ and AIzaSy${'b'.repeat(30)} via http://u:tenant-pw-123456@10.0.0.5/v1 with x-api-key: tenant-secret-token-123456 ${'x'.repeat(500)}`;
    const fault = classifyError(new Error(text), { provider: 'anthropic', now });
    expect(fault.message).not.toContain('a'.repeat(40));
    expect(fault.message).not.toContain('b'.repeat(30));
    expect(fault.message).not.toContain('tenant-pw-123456');
    expect(fault.message).not.toContain('tenant-secret-token-123456');
    expect(fault.message).toContain('sk-ant-…WXYZ');
    expect(fault.message).not.toMatch(/\n/);
    expect(fault.message.length).toBeLessThanOrEqual(300);
    expect(fault.message.endsWith('…')).toBe(true);
  });

  it('the fault is plain frozen data that EngineFaultError carries', () => {
    const fault = classifyError(
      new InternalServerError(529, anthropicBody('overloaded_error', 'Overloaded'), undefined, new Headers()),
      {
        provider: 'anthropic',
        now,
      },
    );
    expect(Object.isFrozen(fault)).toBe(true);
    expect(JSON.parse(JSON.stringify(fault))).toEqual(fault);
    expect(new EngineFaultError(fault).message).toBe('overloaded (529): Overloaded');
    expect(isTransientFault(fault.kind)).toBe(true);
    expect(isSwappableFault(fault.kind)).toBe(true);
  });

  it('credit and bad-request faults never carry a retry time, even when the body names one', () => {
    const err = new InternalServerError(
      400,
      anthropicBody('invalid_request_error', 'Your credit balance is too low. Please try again in 5s.'),
      undefined,
      new Headers({ 'retry-after': '5' }),
    );
    const fault = classifyError(err, { provider: 'anthropic', now });
    expect(fault.kind).toBe('credit_exhausted');
    expect(fault.retryAfterMs).toBeUndefined();
  });
});

describe('classifyError — a broken stream after a captured body is still a network failure', () => {
  it('a cause code outranks whatever body text the adapter captured', () => {
    const terminated = new TypeError('terminated', {
      cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }),
    });
    const fault = classifyError(terminated, {
      provider: 'openai',
      now,
      bodyText: '{"error":{"message":"half a body","type":"server_error"}}',
    });
    expect(fault).toMatchObject({ kind: 'network', code: 'UND_ERR_SOCKET' });
  });
});

describe('classifyError — a stream that broke after its 200', () => {
  it.each([
    ['no end marker', new StreamCutError('no message_stop')],
    [
      'a parser choking on a cut chunk',
      new StreamCutError('Unexpected end', { cause: new SyntaxError('x') }),
    ],
  ])('%s is network (as documented), not a provider error', (_, err) => {
    for (const provider of ['anthropic', 'openai', 'gemini'] as const)
      expect(classifyError(err, { provider, now }).kind).toBe('network');
  });

  it('cut by our idle deadline or the caller, it is timeout / cancelled', () => {
    const err = new StreamCutError('aborted');
    expect(classifyError(err, { provider: 'anthropic', now, timedOut: 'idle' }).kind).toBe('timeout');
    expect(classifyError(err, { provider: 'anthropic', now, callerAborted: true }).kind).toBe('cancelled');
  });
});
