import { describe, expect, it } from 'vitest';
import { CallCancel, callAbortOf, signalAbort } from '../../src/core/call-abort.ts';

describe('CallCancel (the runtime cancelling its own calls without an AbortController)', () => {
  it('runs each listener once, with the reason, and not after it was taken off', () => {
    const cancel = new CallCancel();
    const seen: string[] = [];
    cancel.onAbort(() => seen.push('a'));
    const off = cancel.onAbort(() => seen.push('b'));
    off();
    const reason = new Error('left the call');
    cancel.abort(reason);
    cancel.abort(new Error('again'));
    expect(seen).toEqual(['a']);
    expect(cancel.aborted).toBe(true);
    expect(cancel.reason).toBe(reason);
    // Registered after the abort: runs at once.
    cancel.onAbort(() => seen.push('late'));
    expect(seen).toEqual(['a', 'late']);
  });

  it('makes its AbortSignal only when asked, aborting with the call (before or after it is made)', () => {
    const before = new CallCancel();
    const signal = before.signal;
    expect(signal.aborted).toBe(false);
    before.abort('stop');
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBe('stop');
    const after = new CallCancel();
    after.abort('gone');
    expect(after.signal.aborted).toBe(true);
    expect(after.signal.reason).toBe('gone');
  });

  it("a caller's signal reads the same way (callAbortOf prefers the runtime's)", () => {
    const controller = new AbortController();
    const abort = signalAbort(controller.signal);
    let fired = 0;
    const off = abort.onAbort(() => fired++);
    off();
    abort.onAbort(() => fired++);
    controller.abort('why');
    expect([abort.aborted, abort.reason, fired]).toEqual([true, 'why', 1]);
    const cancel = new CallCancel();
    expect(callAbortOf({ abort: cancel, signal: controller.signal })).toBe(cancel);
    expect(callAbortOf({ signal: controller.signal })?.signal).toBe(controller.signal);
    expect(callAbortOf({})).toBeUndefined();
  });
});
