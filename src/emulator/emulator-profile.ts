import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { parseDocument } from 'yaml';
import { boundedArray, boundedNumber, DAY_MS, LIMITS } from '../config/bounds.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import {
  EMULATOR_FAULT_KINDS,
  EMULATOR_FLAVORS,
  type EmulatorKey,
  type EmulatorProfile,
  type FaultRule,
  type QuotaLimits,
} from './emulator-types.ts';

const limit = boundedNumber({ int: true, gt: 0, max: LIMITS.perMinute, what: 'per minute' })
  .nullable()
  .optional();
const quotaSchema = z.strictObject({ rpm: limit, tpm: limit, itpm: limit, otpm: limit });
const probability = z
  .number()
  .refine((p) => p >= 0 && p <= 1, { message: 'must be between 0 and 1' })
  .optional();
/** Simulated ms: at most 31 days (a fault window, a retry-after). */
const nonNegative = boundedNumber({ min: 0, max: 31 * DAY_MS, what: 'ms (31 days)' }).optional();
/** One call's emulated latency. */
const latencyMs = boundedNumber({ min: 0, max: LIMITS.latencyMs, what: 'ms per call' }).optional();

/** zod schema of a {@link FaultRule}. */
export const faultRuleSchema = z
  .strictObject({
    id: z.string().min(1).optional(),
    kind: z.enum(EMULATOR_FAULT_KINDS as [string, ...string[]]),
    match: z
      .strictObject({
        flavor: z.enum(EMULATOR_FLAVORS as [string, ...string[]]).optional(),
        key: z.string().min(1).optional(),
        model: z.string().min(1).optional(),
      })
      .optional(),
    probability,
    window: z.strictObject({ fromMs: nonNegative, toMs: nonNegative }).optional(),
    count: boundedNumber({ int: true, gt: 0, max: 1_000_000_000, what: 'calls' }).optional(),
    retryAfterMs: nonNegative,
    message: z.string().optional(),
    afterChunks: boundedNumber({ int: true, min: 0, max: 1_000_000, what: 'chunks' }).optional(),
  })
  .superRefine((rule, ctx) => {
    const w = rule.window;
    if (w?.fromMs !== undefined && w.toMs !== undefined && w.toMs <= w.fromMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['window', 'toMs'],
        message: 'must be greater than window.fromMs',
      });
    }
  });

const keySchema = z.strictObject({
  alias: z.string().min(1),
  key: z.string().min(1),
  credit: boundedNumber({ min: 0, max: 1e15, what: 'tokens' }).nullable().optional(),
  quotas: z
    .strictObject({ default: quotaSchema.optional(), models: z.record(z.string(), quotaSchema).optional() })
    .optional(),
});

/** zod schema of an {@link EmulatorProfile}. Unknown fields are refused (a typo must not pass silently). */
export const emulatorProfileSchema = z
  .strictObject({
    seed: z.number().int().optional(),
    timeScale: boundedNumber({
      gt: 0,
      min: LIMITS.timeScaleMin,
      max: LIMITS.timeScaleMax,
      what: 'emulated ms per real ms',
    }).optional(),
    latency: z.strictObject({ minMs: latencyMs, maxMs: latencyMs }).optional(),
    answerTokens: boundedNumber({ int: true, gt: 0, max: 100_000, what: 'tokens' }).optional(),
    streamChunkChars: boundedNumber({ int: true, gt: 0, max: 1_000_000, what: 'chars' }).optional(),
    acceptAnyKey: z.boolean().optional(),
    keys: boundedArray(keySchema, 10_000, 'keys').optional(),
    defaultQuotas: quotaSchema.optional(),
    faults: boundedArray(faultRuleSchema, 10_000, 'fault rules').optional(),
    servers: z
      .strictObject({
        vllm: z.strictObject({ maxNumSeqs: limit }).optional(),
        ollama: z
          .strictObject({
            numParallel: limit,
            maxQueue: boundedNumber({ int: true, min: 0, max: 1_000_000, what: 'requests' }).optional(),
          })
          .optional(),
      })
      .optional(),
  })
  .superRefine((p, ctx) => {
    if (p.latency && (p.latency.minMs ?? 0) > (p.latency.maxMs ?? p.latency.minMs ?? 0)) {
      ctx.addIssue({ code: 'custom', path: ['latency', 'maxMs'], message: 'must be at least latency.minMs' });
    }
    const seen = new Map<string, number>();
    p.keys?.forEach((k, i) => {
      if (seen.has(k.alias)) {
        ctx.addIssue({
          code: 'custom',
          path: ['keys', i, 'alias'],
          message: `duplicates keys[${seen.get(k.alias)}].alias`,
        });
      }
      seen.set(k.alias, i);
    });
  });

/** A profile with every default filled in (what the emulator runs on). */
export interface ResolvedProfile {
  seed: number;
  timeScale: number;
  latency: { minMs: number; maxMs: number };
  answerTokens: number;
  /** Characters per streamed text delta; undefined: every answer in 3 deltas. */
  streamChunkChars: number | undefined;
  acceptAnyKey: boolean;
  keys: EmulatorKey[];
  defaultQuotas: QuotaLimits;
  faults: FaultRule[];
  servers: { vllmMaxNumSeqs: number | null; ollamaNumParallel: number | null; ollamaMaxQueue: number };
}

function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out;
}

function describeIssue(issue: z.core.$ZodIssue): { path: string; message: string } {
  const path = formatPath(issue.path);
  switch (issue.code) {
    case 'unrecognized_keys': {
      const key = issue.keys[0] ?? '';
      return {
        path: path ? `${path}.${key}` : key,
        message: 'is not a known field; remove it or fix its spelling',
      };
    }
    case 'invalid_type':
      return { path, message: `must be ${issue.expected === 'array' ? 'a list' : `a ${issue.expected}`}` };
    case 'invalid_value':
      return { path, message: `must be one of ${issue.values.map(String).join(', ')}` };
    case 'too_small':
      return {
        path,
        message:
          issue.minimum === 0 && !issue.inclusive
            ? 'must be greater than 0'
            : `must be at least ${issue.minimum}`,
      };
    case 'too_big':
      return { path, message: `must be at most ${issue.maximum}` };
    default:
      return { path, message: issue.message };
  }
}

/**
 * Validates a profile value; throws one {@link ConfigError} naming `source` and the first bad field.
 */
export function validateEmulatorProfile(value: unknown, source = 'emulator profile'): EmulatorProfile {
  const parsed = emulatorProfileSchema.safeParse(value ?? {});
  if (!parsed.success) {
    const first = parsed.error.issues[0]!;
    const { path, message } = describeIssue(first);
    const more =
      parsed.error.issues.length > 1 ? ` (and ${parsed.error.issues.length - 1} more problem(s))` : '';
    throw new ConfigError({ source, path, message: message + more });
  }
  return parsed.data as EmulatorProfile;
}

/** Validates one fault rule (as `addFault` and `POST /_emulator/faults` receive it). */
export function validateFaultRule(value: unknown, source = 'fault rule'): FaultRule {
  const parsed = faultRuleSchema.safeParse(value);
  if (!parsed.success) {
    const { path, message } = describeIssue(parsed.error.issues[0]!);
    throw new ConfigError({ source, path, message });
  }
  return parsed.data as FaultRule;
}

/**
 * Loads and validates an emulator profile from a `.json`/`.yaml`/`.yml` file or a plain object.
 * A malformed profile is refused with ONE {@link ConfigError} naming the file and field path,
 * e.g. `profile.yaml at faults[2].probability: must be between 0 and 1`.
 *
 * @example
 * ```ts
 * const profile = loadEmulatorProfile('scenarios/storm.yaml');
 * const emu = await startEmulator({ profile });
 * ```
 */
export function loadEmulatorProfile(pathOrObject: string | unknown): EmulatorProfile {
  if (typeof pathOrObject !== 'string') return validateEmulatorProfile(pathOrObject);
  const file = pathOrObject;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError({
      source: file,
      path: '',
      message: `cannot read the profile (${(e as Error).message})`,
    });
  }
  let value: unknown;
  if (file.endsWith('.json')) {
    try {
      value = JSON.parse(text);
    } catch (e) {
      throw new ConfigError({
        source: file,
        path: '',
        message: `is not valid JSON: ${(e as Error).message}`,
      });
    }
  } else if (file.endsWith('.yaml') || file.endsWith('.yml')) {
    const doc = parseDocument(text);
    const err = doc.errors[0];
    if (err) {
      const line = err.linePos?.[0]?.line;
      throw new ConfigError({
        source: file,
        path: '',
        message: `is not valid YAML: ${err.message.split('\n')[0]}`,
        ...(line !== undefined ? { line } : {}),
      });
    }
    value = doc.toJS();
  } else {
    throw new ConfigError({ source: file, path: '', message: 'must be a .json, .yaml or .yml file' });
  }
  return validateEmulatorProfile(value, file);
}

/** Fills the defaults of a validated profile. */
export function resolveProfile(profile: EmulatorProfile, seedOverride?: number): ResolvedProfile {
  const keys = (profile.keys ?? []).map((k) => ({ ...k }));
  return {
    seed: seedOverride ?? profile.seed ?? 1,
    timeScale: profile.timeScale ?? 1,
    latency: {
      minMs: profile.latency?.minMs ?? 0,
      maxMs: profile.latency?.maxMs ?? profile.latency?.minMs ?? 0,
    },
    answerTokens: profile.answerTokens ?? 60,
    streamChunkChars: profile.streamChunkChars,
    acceptAnyKey: profile.acceptAnyKey ?? keys.length === 0,
    keys,
    defaultQuotas: profile.defaultQuotas ?? {},
    faults: (profile.faults ?? []).map((f) => ({ ...f })),
    servers: {
      vllmMaxNumSeqs: profile.servers?.vllm?.maxNumSeqs ?? null,
      ollamaNumParallel: profile.servers?.ollama?.numParallel ?? null,
      ollamaMaxQueue: profile.servers?.ollama?.maxQueue ?? 512,
    },
  };
}
