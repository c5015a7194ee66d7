// The agent inbox (state.agent_inbox): what waits for an agent. Tool results are added through
// results.ts in the same statement as their card; tasks are added by the api.
import type { Db } from './db.ts';

export interface InboxItem {
  inbox_id: string;
  project_id: string;
  agent_id: string;
  message_type: 'tool_result' | 'task';
  correlation_id: string;
  payload: Record<string, unknown>;
  status: 'pending' | 'claimed' | 'done';
  created_at: Date;
}

export interface InboxRepo {
  pending(projectId: string, agentId: string): Promise<InboxItem[]>;
}

export function createInboxRepo(db: Db): InboxRepo {
  return {
    pending: (projectId, agentId) =>
      db.query<InboxItem>(
        'inbox_pending',
        `SELECT inbox_id, project_id, agent_id, message_type, correlation_id, payload, status, created_at
         FROM state.agent_inbox
         WHERE project_id = $1 AND agent_id = $2 AND status = 'pending'
         ORDER BY created_at`,
        [projectId, agentId],
      ),
  };
}
