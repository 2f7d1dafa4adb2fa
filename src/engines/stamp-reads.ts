/**
 * Makes every chunk read from `body` call `stamp`, through the two ways SDKs read a body: `getReader().read()`
 * (genai) and async iteration (`openai`, `@anthropic-ai/sdk`). Own properties on this one stream shadow the
 * prototype's; the stream itself is untouched (no extra stream, one `then` per chunk).
 */
export function stampReads(body: ReadableStream<Uint8Array>, stamp: () => void): void {
  const stamped = <T>(r: T): T => {
    stamp();
    return r;
  };
  const getReader = body.getReader.bind(body) as (o?: unknown) => ReadableStreamDefaultReader<Uint8Array>;
  Object.defineProperty(body, 'getReader', {
    configurable: true,
    value: (options?: { mode?: string }) => {
      const reader = getReader(options);
      if (options?.mode !== 'byob') {
        const read = reader.read.bind(reader);
        Object.defineProperty(reader, 'read', { configurable: true, value: () => read().then(stamped) });
      }
      return reader;
    },
  });
  const iterate = (body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator].bind(body) as (
    o?: unknown,
  ) => AsyncIterator<Uint8Array>;
  const values = (options?: unknown) => {
    const it = iterate(options);
    const next = it.next.bind(it);
    Object.defineProperty(it, 'next', { configurable: true, value: () => next().then(stamped) });
    return it;
  };
  Object.defineProperty(body, Symbol.asyncIterator, { configurable: true, value: values });
  Object.defineProperty(body, 'values', { configurable: true, value: values });
}
