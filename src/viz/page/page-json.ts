/*
 * What the page reads from the server: JSON from its APIs (an error answer thrown with its message), and
 * records looked up by name through their own entries only.
 */

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const res = await fetch(path, { headers: { accept: 'application/json' }, ...(signal ? { signal } : {}) });
  const body = (await res.json()) as T & { error?: string };
  if (!res.ok) throw new Error(body.error ?? `${res.status} ${path}`);
  return body;
}

export function own<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}
