// Cards: the durable record of every call, result and final answer. Tool results are written
// through results.ts; this module reads them.
import type { Db } from '../core/db.ts';

export const CardKind = {
  toolCall: 'tool.call',
  toolResult: 'tool.result',
  final: 'final',
  message: 'message',
} as const;
export type CardKind = (typeof CardKind)[keyof typeof CardKind];

export interface Card {
  card_id: string;
  project_id: string;
  kind: CardKind;
  tool_call_id: string | null;
  author: string;
  content: unknown;
  metadata: Record<string, unknown>;
  created_at: Date;
}

export interface CardsRepo {
  byId(projectId: string, cardId: string): Promise<Card | undefined>;
  toolResult(projectId: string, toolCallId: string): Promise<Card | undefined>;
  /** Every tool_result card of a project for a tool call id (tests and audits: must be one). */
  countToolResults(projectId: string, toolCallId: string): Promise<number>;
}

const COLUMNS = 'card_id, project_id, kind, tool_call_id, author, content, metadata, created_at';

export function createCardsRepo(db: Db): CardsRepo {
  return {
    byId: async (projectId, cardId) =>
      (
        await db.query<Card>(
          'cards_by_id',
          `SELECT ${COLUMNS} FROM cards WHERE project_id = $1 AND card_id = $2`,
          [projectId, cardId],
        )
      )[0],
    toolResult: async (projectId, toolCallId) =>
      (
        await db.query<Card>(
          'cards_tool_result',
          `SELECT ${COLUMNS} FROM cards
           WHERE tool_call_id = $2 AND project_id = $1 AND kind = 'tool.result'`,
          [projectId, toolCallId],
        )
      )[0],
    countToolResults: async (projectId, toolCallId) => {
      const rows = await db.query<{ n: string }>(
        'cards_count_tool_results',
        `SELECT count(*) AS n FROM cards WHERE tool_call_id = $2 AND project_id = $1 AND kind = 'tool.result'`,
        [projectId, toolCallId],
      );
      return Number(rows[0]?.n ?? 0);
    },
  };
}
