import { createSeededRandom, hash32Of } from '../core/seeded-random.ts';
import type { GeneratedAnswer, WireRequest } from './wire-request.ts';
import { estimateTokens } from './wire-request.ts';

const WORDS = [
  'the',
  'plan',
  'holds',
  'steady',
  'while',
  'agents',
  'share',
  'work',
  'under',
  'load',
  'and',
  'every',
  'call',
  'returns',
  'a',
  'clear',
  'answer',
  'with',
  'care',
  'queue',
  'drains',
  'slowly',
  'signal',
  'checks',
  'pass',
  'report',
  'ready',
  'next',
  'step',
  'follows',
  'now',
  'calm',
  'tide',
  'breakwater',
];

/** A JSON Schema → a sample value: string "sample", number 1, boolean true, enum → first value. */
export function sampleFromSchema(schema: unknown, depth = 0): unknown {
  if (!schema || typeof schema !== 'object' || depth > 6) return 'sample';
  const s = schema as Record<string, unknown>;
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  for (const alt of ['anyOf', 'oneOf', 'allOf'] as const) {
    const list = s[alt];
    if (Array.isArray(list) && list.length > 0) {
      const pick = list.find((x) => (x as { type?: unknown })?.type !== 'null') ?? list[0];
      return sampleFromSchema(pick, depth + 1);
    }
  }
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  switch (typeof type === 'string' ? type.toLowerCase() : type) {
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'array':
      return [sampleFromSchema(s.items, depth + 1)];
    case 'object':
      return sampleObject(s, depth);
    case 'string':
      return 'sample';
    default:
      return s.properties ? sampleObject(s, depth) : 'sample';
  }
}

function sampleObject(s: Record<string, unknown>, depth: number): Record<string, unknown> {
  const props = (s.properties ?? {}) as Record<string, unknown>;
  const required = Array.isArray(s.required) ? (s.required as string[]) : Object.keys(props);
  const out: Record<string, unknown> = {};
  for (const name of required) out[name] = sampleFromSchema(props[name], depth + 1);
  return out;
}

function digest(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 48 ? `${flat.slice(0, 47)}…` : flat;
}

/**
 * Builds the deterministic answer to a call. The words depend only on the seed, the model and
 * the conversation, never on call order, so concurrent tests see stable answers.
 */
export function generateAnswer(
  req: WireRequest,
  opts: { seed: number; answerTokens: number },
): GeneratedAnswer {
  if (req.prefill === undefined) return generateWholeAnswer(req, opts);
  // A prefill is continued: the answer is what follows as many characters as the prefill has (the whole answer
  // to the same conversation, minus its start), so a continued stream ends as one answer of the same length.
  // `max_tokens` counts only the new tokens (as Anthropic and vLLM do): the whole answer is capped at the prefill's
  // tokens plus it, and the rest at it.
  const answer = generateWholeAnswer(
    { ...req, maxTokens: req.maxTokens + estimateTokens(req.prefill) },
    opts,
  );
  if (answer.toolCall) return answer;
  let rest = answer.text.length > req.prefill.length ? answer.text.slice(req.prefill.length) : '.';
  let stopReason = answer.stopReason;
  if (estimateTokens(rest) > req.maxTokens) {
    rest = rest.slice(0, Math.max(1, req.maxTokens * 4));
    stopReason = 'max_tokens';
  }
  return { ...answer, text: rest, stopReason, outputTokens: Math.max(1, estimateTokens(rest)) };
}

function generateWholeAnswer(
  req: WireRequest,
  opts: { seed: number; answerTokens: number },
): GeneratedAnswer {
  const trailingResults = [];
  let lastUser = '';
  for (let i = req.messages.length - 1; i >= 0; i--) {
    const m = req.messages[i]!;
    if (m.role === 'tool_result') trailingResults.unshift(m);
    else if (m.role === 'user') {
      if (!lastUser) lastUser = m.text;
    } else break;
  }
  if (!lastUser) {
    const u = [...req.messages].reverse().find((m) => m.role === 'user');
    lastUser = u && u.role === 'user' ? u.text : '';
  }
  // The hash of model, system and messages joined by NULs, hashed part by part (no copy of the system prompt).
  const h = hash32Of([req.model, '\u0000', req.system, '\u0000', JSON.stringify(req.messages)], opts.seed);

  if (trailingResults.length === 0 && req.tools.length > 0) {
    const tool = req.tools[0]!;
    const args = sampleFromSchema({ type: 'object', ...tool.parameters }) as Record<string, unknown>;
    const id = h.toString(36).padStart(7, '0');
    return {
      text: '',
      toolCall: { id, name: tool.name, args },
      stopReason: 'tool_use',
      inputTokens: req.inputTokens,
      outputTokens: Math.max(1, estimateTokens(tool.name + JSON.stringify(args))),
    };
  }

  let text: string;
  if (trailingResults.length > 0) {
    const r = trailingResults[trailingResults.length - 1]!;
    text = `[${req.model}] The ${r.name} tool returned: "${digest(r.text)}".`;
  } else {
    text = `[${req.model}] About "${digest(lastUser)}":`;
    const rng = createSeededRandom(h);
    const targetChars = opts.answerTokens * 4;
    while (text.length < targetChars) text += ` ${WORDS[rng.int(0, WORDS.length - 1)]}`;
    text += '.';
  }
  let stopReason: GeneratedAnswer['stopReason'] = 'end_turn';
  if (estimateTokens(text) > req.maxTokens) {
    text = text.slice(0, Math.max(0, req.maxTokens * 4));
    stopReason = 'max_tokens';
  }
  return { text, stopReason, inputTokens: req.inputTokens, outputTokens: Math.max(1, estimateTokens(text)) };
}
