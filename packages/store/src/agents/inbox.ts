// The agent inbox (state.agent_inbox): what waits for an agent. Tasks are added by the api; a
// tool result is added (by results.ts, in the statement that writes its card) only when it could
// not be applied to its turn there, for the worker to report.
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../core/db.ts';

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

export interface NewTaskItem {
  projectId: string;
  agentId: string;
  taskId: string;
  payload: Record<string, unknown>;
}

export interface InboxRepo {
  pending(projectId: string, agentId: string): Promise<InboxItem[]>;
  /** Files a task for its agent (correlation id = task id); false if it was filed already. */
  addTask(t: NewTaskItem): Promise<boolean>;
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
    addTask: async (t) =>
      (
        await db.query(
          'inbox_add_task',
          `INSERT INTO state.agent_inbox
             (inbox_id, project_id, agent_id, message_type, correlation_id, payload)
           VALUES ($1, $2, $3, 'task', $4, $5)
           ON CONFLICT (project_id, message_type, md5(correlation_id)) DO NOTHING
           RETURNING inbox_id`,
          [uuidv7(), t.projectId, t.agentId, t.taskId, JSON.stringify(t.payload)],
        )
      ).length === 1,
  };
}
