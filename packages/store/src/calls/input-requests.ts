// Input requests (state.input_requests, migration 0040): what an MCP server asks during a call
// (elicitation) when no MCP client can answer it. The tools service running the call files the
// request and waits; any api instance answers it with one conditional UPDATE of the pending row
// (the first answer stands); the tools service reads the answer and gives it to the server. A
// pending row past expires_at reads as expired even before its tools service marks it so (that
// service may have died): it can no longer be answered.
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../core/db.ts';

export const InputRequestStatus = {
  pending: 'pending',
  answered: 'answered',
  expired: 'expired',
  closed: 'closed',
} as const;
export type InputRequestStatus = (typeof InputRequestStatus)[keyof typeof InputRequestStatus];

export const InputAction = { accept: 'accept', decline: 'decline', cancel: 'cancel' } as const;
export type InputAction = (typeof InputAction)[keyof typeof InputAction];

export interface InputRequestRecord {
  input_request_id: string;
  project_id: string;
  tool_call_id: string;
  channel: string;
  tool_name: string;
  server: string;
  message: string;
  requested_schema: Record<string, unknown>;
  status: InputRequestStatus;
  action: InputAction | null;
  content: Record<string, unknown> | null;
  requested_at: Date;
  expires_at: Date;
  answered_at: Date | null;
  answered_by: string | null;
}

export interface NewInputRequest {
  projectId: string;
  toolCallId: string;
  channel: string;
  toolName: string;
  server: string;
  message: string;
  requestedSchema: Record<string, unknown>;
  expiresAt: Date;
}

export interface InputAnswer {
  action: InputAction;
  content?: Record<string, unknown> | undefined;
  by: string;
}

export interface InputRequestsRepo {
  create(r: NewInputRequest): Promise<InputRequestRecord>;
  get(projectId: string, id: string): Promise<InputRequestRecord | undefined>;
  list(
    projectId: string,
    f: { status?: InputRequestStatus | undefined; limit: number },
  ): Promise<InputRequestRecord[]>;
  /** The pending, unexpired requests of one call, oldest first. */
  pendingForCall(projectId: string, toolCallId: string): Promise<InputRequestRecord[]>;
  /**
   * Answers a pending, unexpired request. `answered` is false when it was not pending any more
   * (or has expired): the record then says what it is.
   */
  answer(
    projectId: string,
    id: string,
    a: InputAnswer,
  ): Promise<{ answered: boolean; record: InputRequestRecord } | undefined>;
  /**
   * Ends a pending request without an answer (`expired` or `closed`); returns the record as it
   * now is: answered, if an answer came first.
   */
  end(
    projectId: string,
    id: string,
    status: 'expired' | 'closed',
  ): Promise<InputRequestRecord | undefined>;
}

// A pending row past its deadline reads as expired, whoever has not yet marked it.
const COLUMNS = `input_request_id, project_id, tool_call_id, channel, tool_name, server, message,
  requested_schema,
  CASE WHEN status = 'pending' AND expires_at <= now() THEN 'expired' ELSE status END AS status,
  action, content, requested_at, expires_at, answered_at, answered_by`;

export function createInputRequestsRepo(db: Db): InputRequestsRepo {
  const get = async (projectId: string, id: string) =>
    (
      await db.query<InputRequestRecord>(
        'input_requests_get',
        `SELECT ${COLUMNS} FROM state.input_requests
          WHERE project_id = $1 AND input_request_id = $2`,
        [projectId, id],
      )
    )[0];
  return {
    create: async (r) =>
      (
        await db.query<InputRequestRecord>(
          'input_requests_create',
          `INSERT INTO state.input_requests
             (input_request_id, project_id, tool_call_id, channel, tool_name, server, message,
              requested_schema, status, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9)
           RETURNING ${COLUMNS}`,
          [
            uuidv7(),
            r.projectId,
            r.toolCallId,
            r.channel,
            r.toolName,
            r.server,
            r.message,
            JSON.stringify(r.requestedSchema),
            r.expiresAt,
          ],
        )
      )[0]!,
    get,
    list: async (projectId, f) => {
      const status = f.status ?? null;
      return db.query<InputRequestRecord>(
        'input_requests_list',
        `SELECT * FROM (SELECT ${COLUMNS} FROM state.input_requests WHERE project_id = $1) r
          WHERE $2::text IS NULL OR r.status = $2
          ORDER BY requested_at DESC LIMIT $3`,
        [projectId, status, f.limit],
      );
    },
    pendingForCall: (projectId, toolCallId) =>
      db.query<InputRequestRecord>(
        'input_requests_pending_for_call',
        `SELECT ${COLUMNS} FROM state.input_requests
          WHERE project_id = $1 AND tool_call_id = $2 AND status = 'pending'
            AND expires_at > now()
          ORDER BY requested_at`,
        [projectId, toolCallId],
      ),
    answer: async (projectId, id, a) => {
      const [row] = await db.query<InputRequestRecord>(
        'input_requests_answer',
        `UPDATE state.input_requests
            SET status = 'answered', action = $3, content = $4, answered_at = now(),
                answered_by = $5
          WHERE project_id = $1 AND input_request_id = $2 AND status = 'pending'
            AND expires_at > now()
          RETURNING ${COLUMNS}`,
        [projectId, id, a.action, a.content === undefined ? null : JSON.stringify(a.content), a.by],
      );
      if (row) return { answered: true, record: row };
      const record = await get(projectId, id);
      return record ? { answered: false, record } : undefined;
    },
    end: async (projectId, id, status) => {
      const [row] = await db.query<InputRequestRecord>(
        'input_requests_end',
        `UPDATE state.input_requests SET status = $3
          WHERE project_id = $1 AND input_request_id = $2 AND status = 'pending'
          RETURNING ${COLUMNS}`,
        [projectId, id, status],
      );
      return row ?? (await get(projectId, id));
    },
  };
}
