// Cards the agent worker writes itself (messages, tool calls, refused or timed-out results,
// finals), inside the transaction of the turn write they belong to, and how a turn's cards are
// read back.
import { v7 as uuidv7 } from 'uuid';
import type { Card } from '../calls/cards.ts';
import type { Db } from '../core/db.ts';

export const CARD_COLUMNS =
  'card_id, project_id, kind, tool_call_id, author, content, metadata, created_at';

export function insertCard(
  db: Db,
  c: {
    projectId: string;
    kind: Card['kind'];
    toolCallId?: string | null;
    author: string;
    content: unknown;
    metadata: Record<string, unknown>;
  },
): Promise<Card[]> {
  return db.query<Card>(
    'turns_insert_card',
    `INSERT INTO cards (card_id, project_id, kind, tool_call_id, author, content, metadata)
     VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${CARD_COLUMNS}`,
    [
      uuidv7(),
      c.projectId,
      c.kind,
      c.toolCallId ?? null,
      c.author,
      JSON.stringify(c.content),
      JSON.stringify(c.metadata),
    ],
  );
}

/**
 * A card of a turn as its conversation shows it. The first card holds the task's input as given
 * (migration 0045); a structured input is shown as the text the model reads: JSON.stringify of
 * the value as Postgres gives it back (its key order is jsonb's), as the worker always made it.
 */
export function shownCard(card: Card): Card {
  const c = card.content as { role?: unknown; content?: unknown } | null;
  if (card.kind !== 'message' || c?.role !== 'user' || typeof c.content === 'string') return card;
  return { ...card, content: { ...c, content: JSON.stringify(c.content ?? null) } };
}
