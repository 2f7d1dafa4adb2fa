/**
 * Waits for real I/O (a request reaching a server, a socket closing) to make `check` true. Polls with
 * event-loop turns first, then every 5 ms; gives up after `maxMs` of real time with an error naming
 * `what`. The bound only stops a broken test: a loaded machine is slower, never wrong, well within it.
 *
 * @example
 * ```ts
 * await waitFor(() => emulator.stats().held === 1, 'the emulator to hold the request');
 * ```
 */
export async function waitFor(check: () => boolean, what: string, maxMs = 20_000): Promise<void> {
  for (let i = 0; i < 50; i++) {
    if (check()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  const deadline = Date.now() + maxMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`waited ${maxMs} ms for ${what}; it never happened`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Whether `promise` is still pending after `ms` of real time. A lower bound on how long something did
 * not happen: a slow machine can only make the wait longer, not the answer different.
 *
 * @example
 * ```ts
 * expect(await stillPendingAfter(reader.read(), 300)).toBe(true);
 * ```
 */
export async function stillPendingAfter(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  promise.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  await new Promise((resolve) => setTimeout(resolve, ms));
  return !settled;
}
