import type { AgendaItem } from '../scenarios/scenario-types.ts';

/** What the others said about an item in the previous round. */
export interface PeerAnswer {
  readonly agent: string;
  readonly answer: string;
}

/** Longest excerpt of a peer's answer quoted in a prompt, in characters. */
const PEER_EXCERPT = 240;

/**
 * The prompt of one agenda item in one round. Deterministic from its inputs (the previous round's committed
 * answers), so a resumed run sends exactly the prompt it would have sent.
 *
 * @example
 * ```ts
 * roundPrompt({ id: 'U01', title: 'Payment API 5xx spike', kind: 'urgent' }, 2, 3, [{ agent: 'Kai', answer: 'Roll back.' }]);
 * ```
 */
export function roundPrompt(
  item: AgendaItem,
  round: number,
  rounds: number,
  peers: readonly PeerAnswer[],
): string {
  const lines = [
    `Round ${round} of ${rounds}. Agenda item ${item.id}${item.kind ? ` (${item.kind})` : ''}: ${item.title}.`,
  ];
  if (item.detail) lines.push(item.detail);
  if (peers.length > 0) {
    lines.push('In the previous round the others said:');
    for (const p of peers) lines.push(`- ${p.agent}: ${excerpt(p.answer)}`);
  }
  lines.push('Give your position in at most three sentences.');
  return lines.join('\n');
}

function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > PEER_EXCERPT ? `${flat.slice(0, PEER_EXCERPT - 1)}…` : flat;
}
