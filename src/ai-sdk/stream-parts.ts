import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import type { Turn } from '../core/turn.ts';
import type { StreamEvent } from '../runtime/turn-stream.ts';
import { metadataOf } from './breakwater-metadata.ts';
import { finishReasonOf, responseOf, toolCallPart, usageOf } from './result-mapping.ts';

/** Turns breakwater stream events into AI SDK stream parts (text parts by id, whitespace held back). */
export class StreamParts {
  #textId: string | undefined;
  #n = 0;
  #held = '';
  #shown = 0;

  on(e: StreamEvent): LanguageModelV3StreamPart[] {
    const out: LanguageModelV3StreamPart[] = [];
    if (e.type === 'endpoint') {
      if (e.mode === 'restart' && e.withdrawn > 0 && this.#textId) {
        out.push(...this.#withdrawText());
      } else if (e.withdrawn > 0) {
        // A continuation drops the partial answer's trailing whitespace: it was held back, never shown.
        this.#held = this.#held.slice(0, Math.max(0, this.#held.length - e.withdrawn));
      }
    } else if (e.type === 'text') {
      if (!this.#textId) {
        this.#textId = `text-${this.#n++}`;
        out.push({ type: 'text-start', id: this.#textId });
      }
      const all = this.#held + e.text;
      const visible = all.trimEnd();
      this.#held = all.slice(visible.length);
      if (visible) {
        this.#shown += visible.length;
        out.push({ type: 'text-delta', id: this.#textId, delta: visible });
      }
    } else if (e.type === 'step') {
      out.push(...this.#closeText());
    }
    return out;
  }

  finish(turn: Turn): LanguageModelV3StreamPart[] {
    // A degraded turn's text is the degraded answer, not the partial one streamed before the chain gave up: that
    // part is withdrawn (as after a restart), so nothing glues the partial text onto the summary.
    const out = turn.degraded ? this.#withdrawText() : this.#closeText();
    // A degraded answer never streamed: it is the turn's text, whole.
    if (turn.degraded && turn.answer.text) {
      const id = `text-${this.#n++}`;
      out.push(
        { type: 'text-start', id },
        { type: 'text-delta', id, delta: turn.answer.text },
        { type: 'text-end', id },
      );
    }
    for (const call of turn.toolCalls ?? []) {
      const part = toolCallPart(call);
      out.push(
        { type: 'tool-input-start', id: part.toolCallId, toolName: part.toolName },
        { type: 'tool-input-delta', id: part.toolCallId, delta: part.input },
        { type: 'tool-input-end', id: part.toolCallId },
        part,
      );
    }
    out.push(
      { type: 'response-metadata', ...responseOf(turn) },
      {
        type: 'finish',
        usage: usageOf(turn),
        finishReason: finishReasonOf(turn),
        providerMetadata: { breakwater: metadataOf(turn) },
      },
    );
    return out;
  }

  /** Closes the open text part as withdrawn (its held-back whitespace dropped): it is not part of the answer. */
  #withdrawText(): LanguageModelV3StreamPart[] {
    if (!this.#textId) return [];
    const out: LanguageModelV3StreamPart[] = [
      {
        type: 'text-end',
        id: this.#textId,
        providerMetadata: { breakwater: { withdrawn: true, chars: this.#shown } },
      },
    ];
    this.#textId = undefined;
    this.#held = '';
    this.#shown = 0;
    return out;
  }

  #closeText(): LanguageModelV3StreamPart[] {
    if (!this.#textId) return [];
    const out: LanguageModelV3StreamPart[] = [];
    if (this.#held) out.push({ type: 'text-delta', id: this.#textId, delta: this.#held });
    out.push({ type: 'text-end', id: this.#textId });
    this.#textId = undefined;
    this.#held = '';
    this.#shown = 0;
    return out;
  }
}
