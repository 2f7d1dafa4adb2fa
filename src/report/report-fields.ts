/*
 * Readers of the loosely typed fields of stored events and a run's stored config: a field that is absent or of
 * the wrong type reads as absent (a report is built from whatever an older or foreign writer stored).
 */

/** A finite number, else `undefined`. */
export const num = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) ? v : undefined;

/** A string, else `undefined`. */
export const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** An object's fields, else none. */
export const record = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' ? (v as Record<string, unknown>) : {};
