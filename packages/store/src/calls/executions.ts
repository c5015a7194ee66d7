// The tool execution log (state.tool_executions): one row per tool call, queued by the api when
// it publishes a call over HTTP, opened when a handler starts and closed with the result card
// (see results.ts). Status, history, metrics and the list of active executions read from here;
// the history and metrics queries live in execution-stats.ts.
import type { CallContext } from '@toolmesh/protocol';
import type { Db } from '../core/db.ts';
import { ExecutionStatus, type Execution } from './execution-record.ts';
import { STARTED_BY, createExecutionStats, type ExecutionStats } from './execution-stats.ts';

export { ExecutionStatus };
export type { Execution };

export interface StartExecution {
  projectId: string;
  toolCallId: string;
  channel: string;
  toolName: string;
  target: string;
  agentId?: string | undefined;
  instanceId: string;
  /** Already capped by the caller of the repo (see cappedArguments). */
  arguments?: unknown;
  turnId?: string | undefined;
  context?: CallContext | undefined;
  /** Only the api sets it, when it queues a call for an API key. */
  keyId?: string | undefined;
  /** As the publisher's header named it; kept only when it is a credential of the project. */
  credentialId?: string | undefined;
  /** Only the api sets it: the fingerprint of the HTTP request that queued the call. */
  requestFingerprint?: string | undefined;
  /** The call's own deadline (its timeout_ms), when it gave one. */
  timeoutMs?: number | undefined;
}

export interface ExecutionsRepo extends ExecutionStats {
  /** Opens (or, on a retry, re-opens) the row as running; a finished row is left alone. */
  start(e: StartExecution): Promise<void>;
  /** Records a call as queued before it is published; undefined if the id is already known. */
  enqueue(e: StartExecution): Promise<Execution | undefined>;
  /**
   * The fingerprint of the HTTP request that queued the call: null for a call that came another
   * way, undefined when there is no such execution.
   */
  requestFingerprint(projectId: string, toolCallId: string): Promise<string | null | undefined>;
  /** Removes a row that is still queued (its publish failed); a started one is kept. */
  dropQueued(projectId: string, toolCallId: string): Promise<void>;
  get(projectId: string, toolCallId: string): Promise<Execution | undefined>;
  running(projectId: string): Promise<Execution[]>;
  /** Queued and running executions, oldest first; with a key, only those it started. */
  active(projectId: string, limit: number, key?: string): Promise<Execution[]>;
  /** Whether an API key started the execution: over HTTP, or as a call of a task it started. */
  startedBy(e: Execution, keyId: string): Promise<boolean>;
}

/** The task of an agent turn named by a (header-given, so unchecked) turn id. */
export const TASK_OF_TURN = (turnId: string) =>
  `(SELECT task_id FROM state.turns WHERE turn_id =
     CASE WHEN ${turnId}::text ~ '^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$'
          THEN ${turnId}::text::uuid END)`;

const UUID = `'^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$'`;

/**
 * The bus credential named by a (publisher-given, so unchecked) id: the id when it is a
 * credential of the project, else NULL. NATS does not tell a consumer who published a message,
 * so this is what the publisher declared, bounded to its own project's credentials.
 */
export const CREDENTIAL_OF = (projectId: string, credentialId: string) =>
  `(SELECT b.credential_id FROM resource.bus_credentials b
     WHERE b.project_id = ${projectId} AND b.credential_id =
       CASE WHEN ${credentialId}::text ~ ${UUID} THEN ${credentialId}::text::uuid END)`;

/** The context columns' values of a call. */
export const contextValues = (c: CallContext | undefined): [string | null, string | null] => [
  c?.session_id ?? null,
  c?.metadata === undefined ? null : JSON.stringify(c.metadata),
];

/**
 * Arguments as the execution log keeps them: as sent, or, past `maxBytes` of JSON, a marker
 * with their size (the full call is still in the stream and its tool.call card, if any).
 */
export function cappedArguments(args: unknown, maxBytes: number): unknown {
  if (args === undefined) return undefined;
  const text = JSON.stringify(args);
  const size = Buffer.byteLength(text);
  if (size > maxBytes) return { $truncated: { size_bytes: size, limit_bytes: maxBytes } };
  // jsonb cannot hold a NUL character: such arguments are left out, so the call's own result
  // (a tool refusing the NUL, say) is still filed instead of an internal error.
  if (text.includes('\\u0000'))
    return { $unstorable: { reason: 'a NUL character', size_bytes: size } };
  return args;
}

const COLUMNS = `project_id, tool_call_id, channel, tool_name, target, agent_id, status, error_code,
  instance_id, attempts, card_id, created_at, started_at, finished_at, duration_ms, cost,
  cost_currency, arguments, turn_id, task_id, session_id, context_metadata, key_id,
  credential_id, timeout_ms`;

export function createExecutionsRepo(db: Db): ExecutionsRepo {
  return {
    start: async (e) => {
      await db.query(
        'executions_start',
        `INSERT INTO state.tool_executions
           (project_id, tool_call_id, channel, tool_name, target, agent_id, status, instance_id,
            arguments, turn_id, task_id, session_id, context_metadata, credential_id, timeout_ms)
         VALUES ($1, $2, $3, $4, $5, $6, 'running', $7, $8, $9, ${TASK_OF_TURN('$9')}, $10, $11,
                 ${CREDENTIAL_OF('$1', '$12')}, $13)
         ON CONFLICT (project_id, md5(tool_call_id)) DO UPDATE
           SET status = 'running',
               -- The first context recorded stays: a queued row's is the api's own.
               session_id = coalesce(state.tool_executions.session_id, EXCLUDED.session_id),
               context_metadata = coalesce(state.tool_executions.context_metadata,
                                           EXCLUDED.context_metadata),
               credential_id = coalesce(state.tool_executions.credential_id,
                                        EXCLUDED.credential_id),
               timeout_ms = coalesce(state.tool_executions.timeout_ms, EXCLUDED.timeout_ms),
               arguments = coalesce(EXCLUDED.arguments, state.tool_executions.arguments),
               turn_id = coalesce(EXCLUDED.turn_id, state.tool_executions.turn_id),
               task_id = coalesce(EXCLUDED.task_id, state.tool_executions.task_id),
               -- A queued row (published over HTTP) is starting its first attempt, not a retry.
               attempts = state.tool_executions.attempts
                 + CASE WHEN state.tool_executions.status IN ('queued', 'awaiting_approval')
                        THEN 0 ELSE 1 END,
               instance_id = EXCLUDED.instance_id,
               started_at = now()
           WHERE state.tool_executions.status IN ('queued', 'awaiting_approval', 'running')`,
        [
          e.projectId,
          e.toolCallId,
          e.channel,
          e.toolName,
          e.target,
          e.agentId ?? null,
          e.instanceId,
          e.arguments === undefined ? null : JSON.stringify(e.arguments),
          e.turnId ?? null,
          ...contextValues(e.context),
          e.credentialId ?? null,
          e.timeoutMs ?? null,
        ],
      );
    },
    enqueue: async (e) =>
      (
        await db.query<Execution>(
          'executions_enqueue',
          `INSERT INTO state.tool_executions
             (project_id, tool_call_id, channel, tool_name, target, agent_id, status, instance_id,
              session_id, context_metadata, key_id, request_fingerprint, timeout_ms)
           VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7, $8, $9, $10, $11, $12)
           ON CONFLICT (project_id, md5(tool_call_id)) DO NOTHING
           RETURNING ${COLUMNS}`,
          [
            e.projectId,
            e.toolCallId,
            e.channel,
            e.toolName,
            e.target,
            e.agentId ?? null,
            e.instanceId,
            ...contextValues(e.context),
            e.keyId ?? null,
            e.requestFingerprint ?? null,
            e.timeoutMs ?? null,
          ],
        )
      )[0],
    requestFingerprint: async (projectId, toolCallId) => {
      const [row] = await db.query<{ request_fingerprint: string | null }>(
        'executions_request_fingerprint',
        `SELECT request_fingerprint FROM state.tool_executions
         WHERE tool_call_id = $2 AND project_id = $1`,
        [projectId, toolCallId],
      );
      return row ? row.request_fingerprint : undefined;
    },
    dropQueued: async (projectId, toolCallId) => {
      await db.query(
        'executions_drop_queued',
        `DELETE FROM state.tool_executions
         WHERE tool_call_id = $2 AND project_id = $1 AND status = 'queued'`,
        [projectId, toolCallId],
      );
    },
    get: async (projectId, toolCallId) =>
      (
        await db.query<Execution>(
          'executions_get',
          `SELECT ${COLUMNS} FROM state.tool_executions WHERE tool_call_id = $2 AND project_id = $1`,
          [projectId, toolCallId],
        )
      )[0],
    running: (projectId) =>
      db.query<Execution>(
        'executions_running',
        `SELECT ${COLUMNS} FROM state.tool_executions
         WHERE project_id = $1 AND status = 'running' ORDER BY started_at`,
        [projectId],
      ),
    active: (projectId, limit, key) =>
      db.query<Execution>(
        'executions_active',
        `SELECT ${COLUMNS} FROM state.tool_executions e
         WHERE project_id = $1 AND status IN ('queued', 'awaiting_approval', 'running')
           AND ${STARTED_BY('$3')}
         ORDER BY created_at, tool_call_id LIMIT $2`,
        [projectId, limit, key ?? null],
      ),
    startedBy: async (e, keyId) => {
      if (e.key_id !== null) return e.key_id === keyId;
      if (e.task_id === null) return false;
      const rows = await db.query(
        'executions_task_key',
        'SELECT 1 FROM state.tasks WHERE project_id = $1 AND task_id = $2 AND key_id = $3',
        [e.project_id, e.task_id, keyId],
      );
      return rows.length === 1;
    },
    ...createExecutionStats(db),
  };
}
