// Human approvals of tool calls (state.approvals) and the targets that require them
// (resource.target_approvals). A tool service parks a call here instead of running it; a
// decision (approve, deny, or the deadline passing) is one conditional UPDATE of a pending row,
// so whoever decides first decides for good, on any instance. The decided call is then published
// again and the tool service either runs it or files its failed card (see tool-service).
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../core/db.ts';

export const ApprovalStatus = {
  pending: 'pending',
  approved: 'approved',
  denied: 'denied',
  timed_out: 'timed_out',
  canceled: 'canceled',
} as const;
export type ApprovalStatus = (typeof ApprovalStatus)[keyof typeof ApprovalStatus];

/** Where a call's need for approval came from. */
export interface RequiredBy {
  source: 'tool' | 'agent' | 'target';
  mode: 'required' | 'destructive';
}

export interface ApprovalRecord {
  approval_id: string;
  project_id: string;
  tool_call_id: string;
  channel: string;
  tool_name: string;
  target: string;
  agent_id: string | null;
  arguments: Record<string, unknown> | null;
  required_by: RequiredBy;
  status: ApprovalStatus;
  requested_at: Date;
  expires_at: Date;
  decided_at: Date | null;
  decided_by: string | null;
  decision_reason: string | null;
  dispatched_at: Date | null;
}

/** A decided approval with the call message to publish again. */
export interface DecidedApproval extends ApprovalRecord {
  subject: string;
  headers: Record<string, string>;
  body: Buffer;
}

export interface ParkCall {
  projectId: string;
  toolCallId: string;
  channel: string;
  toolName: string;
  target: string;
  agentId?: string | undefined;
  instanceId: string;
  /** As the execution log keeps them. */
  arguments?: unknown;
  requiredBy: RequiredBy;
  timeoutMs: number;
  subject: string;
  headers: Record<string, string>;
  body: Uint8Array;
  turnId?: string | undefined;
}

/** What a project's registry, agent tool config and targets say about a call. */
export interface ApprovalPolicyRow {
  tool_options: Record<string, unknown> | null;
  annotations: Record<string, unknown> | null;
  agent_config: Record<string, unknown> | null;
  target_approval: 'required' | 'destructive' | null;
  target_timeout_ms: number | null;
}

export interface TargetApproval {
  project_id: string;
  target: string;
  approval: 'required' | 'destructive';
  approval_timeout_ms: number | null;
  updated_at: Date;
}

export type Decision = 'approved' | 'denied';

export interface ApprovalFilter {
  status?: ApprovalStatus | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
  limit: number;
}

export interface ApprovalsRepo {
  policy(
    projectId: string,
    toolName: string,
    target: string,
    agentId: string | undefined,
  ): Promise<ApprovalPolicyRow>;
  /**
   * Parks a call: the approval row (once per call; a second park returns the first row), the
   * execution row as awaiting_approval, and the deadline of an agent's pending call pushed past
   * the approval's, so the agent does not give up on a call that waits for a person.
   */
  park(c: ParkCall): Promise<ApprovalRecord>;
  forCall(projectId: string, toolCallId: string): Promise<ApprovalRecord | undefined>;
  get(projectId: string, approvalId: string): Promise<ApprovalRecord | undefined>;
  /** Newest first; `from` (inclusive) and `to` (exclusive) bound requested_at. */
  list(projectId: string, f: ApprovalFilter): Promise<ApprovalRecord[]>;
  /**
   * Decides a pending approval. `decided` is false when it was not pending any more (or had
   * expired, in which case it is now timed_out): the record then holds the first decision.
   */
  decide(
    projectId: string,
    approvalId: string,
    decision: Decision,
    by: string,
    reason: string | undefined,
  ): Promise<{ decided: boolean; record: DecidedApproval } | undefined>;
  /**
   * A pending approval whose call was canceled ends `canceled` (by `by`, with the cancel's
   * reason); undefined when the call has no pending approval.
   */
  cancel(
    projectId: string,
    toolCallId: string,
    by: string,
    reason: string,
  ): Promise<DecidedApproval | undefined>;
  /** Pending approvals past their deadline become timed_out (SKIP LOCKED: once each). */
  expire(limit: number): Promise<DecidedApproval[]>;
  /** Decided approvals whose call was not published again `olderThanMs` after the decision. */
  undispatched(olderThanMs: number, limit: number): Promise<DecidedApproval[]>;
  markDispatched(approvalId: string): Promise<void>;
  setTarget(
    projectId: string,
    target: string,
    approval: 'required' | 'destructive',
    timeoutMs: number | undefined,
  ): Promise<TargetApproval>;
  getTarget(projectId: string, target: string): Promise<TargetApproval | undefined>;
  listTargets(projectId: string): Promise<TargetApproval[]>;
  deleteTarget(projectId: string, target: string): Promise<boolean>;
}

const COLUMNS = `approval_id, project_id, tool_call_id, channel, tool_name, target, agent_id, arguments,
  required_by, status, requested_at, expires_at, decided_at, decided_by, decision_reason,
  dispatched_at`;
const DECIDED = `${COLUMNS}, subject, headers, body`;

export function createApprovalsRepo(db: Db): ApprovalsRepo {
  return {
    policy: async (projectId, toolName, target, agentId) =>
      (
        await db.query<ApprovalPolicyRow>(
          'approvals_policy',
          `SELECT t.options AS tool_options, t.annotations,
                  (SELECT at.config FROM resource.agent_tools at
                    WHERE at.project_id = $1 AND at.agent_id = $4 AND at.tool_id = t.tool_id)
                    AS agent_config,
                  ta.approval AS target_approval, ta.approval_timeout_ms AS target_timeout_ms
             FROM (SELECT 1) one
             LEFT JOIN resource.tools t ON t.project_id = $1 AND t.name = $2
             LEFT JOIN resource.target_approvals ta ON ta.project_id = $1 AND ta.target = $3`,
          [projectId, toolName, target, agentId ?? null],
        )
      )[0]!,
    park: (c) =>
      db.tx(async (tx) => {
        const args = c.arguments === undefined ? null : JSON.stringify(c.arguments);
        const [inserted] = await tx.query<ApprovalRecord>(
          'approvals_park',
          `INSERT INTO state.approvals
             (approval_id, project_id, tool_call_id, channel, tool_name, target, agent_id,
              arguments, required_by, subject, headers, body, status, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'pending',
                   now() + make_interval(secs => $13::float8 / 1000))
           ON CONFLICT (project_id, md5(tool_call_id)) DO NOTHING
           RETURNING ${COLUMNS}`,
          [
            uuidv7(),
            c.projectId,
            c.toolCallId,
            c.channel,
            c.toolName,
            c.target,
            c.agentId ?? null,
            args,
            JSON.stringify(c.requiredBy),
            c.subject,
            JSON.stringify(c.headers),
            Buffer.from(c.body),
            c.timeoutMs,
          ],
        );
        if (!inserted) {
          const [existing] = await tx.query<ApprovalRecord>(
            'approvals_park_existing',
            `SELECT ${COLUMNS} FROM state.approvals
            WHERE project_id = $1 AND md5(tool_call_id) = md5($2) AND tool_call_id = $2`,
            [c.projectId, c.toolCallId],
          );
          return existing!;
        }
        await tx.query(
          'approvals_park_execution',
          `INSERT INTO state.tool_executions
             (project_id, tool_call_id, channel, tool_name, target, agent_id, status,
              instance_id, arguments, turn_id)
           VALUES ($1, $2, $3, $4, $5, $6, 'awaiting_approval', $7, $8, $9)
           ON CONFLICT (project_id, md5(tool_call_id)) DO UPDATE
             SET status = 'awaiting_approval', instance_id = EXCLUDED.instance_id,
                 arguments = coalesce(EXCLUDED.arguments, state.tool_executions.arguments)
             WHERE state.tool_executions.status IN ('queued', 'running')`,
          [
            c.projectId,
            c.toolCallId,
            c.channel,
            c.toolName,
            c.target,
            c.agentId ?? null,
            c.instanceId,
            args,
            c.turnId ?? null,
          ],
        );
        // The agent waits for a person, not for the tool: its deadline starts again when the
        // approval's ends.
        await tx.query(
          'approvals_park_turn_deadline',
          `UPDATE state.turn_calls
              SET deadline_at = greatest(deadline_at,
                    $3::timestamptz + make_interval(secs => deadline_ms::float8 / 1000))
            WHERE project_id = $1 AND tool_call_id = $2 AND status = 'pending'`,
          [c.projectId, c.toolCallId, inserted.expires_at],
        );
        return inserted;
      }),
    forCall: async (projectId, toolCallId) =>
      (
        await db.query<ApprovalRecord>(
          'approvals_for_call',
          `SELECT ${COLUMNS} FROM state.approvals WHERE project_id = $1 AND tool_call_id = $2`,
          [projectId, toolCallId],
        )
      )[0],
    get: async (projectId, approvalId) =>
      (
        await db.query<ApprovalRecord>(
          'approvals_get',
          `SELECT ${COLUMNS} FROM state.approvals WHERE project_id = $1 AND approval_id = $2`,
          [projectId, approvalId],
        )
      )[0],
    list: (projectId, f) =>
      db.query<ApprovalRecord>(
        'approvals_list',
        `SELECT ${COLUMNS} FROM state.approvals
          WHERE project_id = $1 AND ($2::text IS NULL OR status = $2)
            AND ($4::timestamptz IS NULL OR requested_at >= $4)
            AND ($5::timestamptz IS NULL OR requested_at < $5)
          ORDER BY requested_at DESC, approval_id DESC LIMIT $3`,
        [projectId, f.status ?? null, f.limit, f.from ?? null, f.to ?? null],
      ),
    decide: async (projectId, approvalId, decision, by, reason) => {
      // A pending row past its deadline is timed out by whoever touches it first, a decision
      // arriving late included: the deadline, not the scan's timing, decides.
      const [updated] = await db.query<DecidedApproval>(
        'approvals_decide',
        `UPDATE state.approvals
            SET status = CASE WHEN expires_at > now() THEN $3::text ELSE 'timed_out' END,
                decided_at = now(),
                decided_by = CASE WHEN expires_at > now() THEN $4::text ELSE 'system' END,
                decision_reason = CASE WHEN expires_at > now() THEN $5::text
                                       ELSE 'no decision before the deadline' END
          WHERE project_id = $1 AND approval_id = $2 AND status = 'pending'
          RETURNING ${DECIDED}`,
        [projectId, approvalId, decision, by, reason ?? null],
      );
      if (updated) return { decided: updated.status === decision, record: updated };
      // Not pending (any more): a statement of its own, so a decision committed while this one
      // waited for the row is what it reads.
      const [first] = await db.query<DecidedApproval>(
        'approvals_get_decided',
        `SELECT ${DECIDED} FROM state.approvals WHERE project_id = $1 AND approval_id = $2`,
        [projectId, approvalId],
      );
      return first ? { decided: false, record: first } : undefined;
    },
    cancel: async (projectId, toolCallId, by, reason) =>
      (
        await db.query<DecidedApproval>(
          'approvals_cancel',
          `UPDATE state.approvals
              SET status = 'canceled', decided_at = now(), decided_by = $3, decision_reason = $4
            WHERE project_id = $1 AND md5(tool_call_id) = md5($2) AND tool_call_id = $2
              AND status = 'pending'
            RETURNING ${DECIDED}`,
          [projectId, toolCallId, by, reason],
        )
      )[0],
    expire: (limit) =>
      db.query<DecidedApproval>(
        'approvals_expire',
        `UPDATE state.approvals
            SET status = 'timed_out', decided_at = now(), decided_by = 'system',
                decision_reason = 'no decision before the deadline'
          WHERE approval_id IN (
            SELECT approval_id FROM state.approvals
             WHERE status = 'pending' AND expires_at <= now()
             ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
            AND status = 'pending'
          RETURNING ${DECIDED}`,
        [limit],
      ),
    undispatched: (olderThanMs, limit) =>
      db.query<DecidedApproval>(
        'approvals_undispatched',
        `SELECT ${DECIDED} FROM state.approvals
          WHERE status <> 'pending' AND dispatched_at IS NULL
            AND decided_at < now() - make_interval(secs => $1::float8 / 1000)
          ORDER BY decided_at LIMIT $2`,
        [olderThanMs, limit],
      ),
    markDispatched: async (approvalId) => {
      await db.query(
        'approvals_dispatched',
        `UPDATE state.approvals SET dispatched_at = now()
          WHERE approval_id = $1 AND dispatched_at IS NULL`,
        [approvalId],
      );
    },
    setTarget: async (projectId, target, approval, timeoutMs) =>
      (
        await db.query<TargetApproval>(
          'target_approvals_set',
          `INSERT INTO resource.target_approvals (project_id, target, approval, approval_timeout_ms)
           VALUES ($1, $2, $3, $4)
           ON CONFLICT (project_id, target) DO UPDATE
             SET approval = EXCLUDED.approval,
                 approval_timeout_ms = EXCLUDED.approval_timeout_ms, updated_at = now()
           RETURNING project_id, target, approval, approval_timeout_ms, updated_at`,
          [projectId, target, approval, timeoutMs ?? null],
        )
      )[0]!,
    getTarget: async (projectId, target) =>
      (
        await db.query<TargetApproval>(
          'target_approvals_get',
          `SELECT project_id, target, approval, approval_timeout_ms, updated_at
             FROM resource.target_approvals WHERE project_id = $1 AND target = $2`,
          [projectId, target],
        )
      )[0],
    listTargets: (projectId) =>
      db.query<TargetApproval>(
        'target_approvals_list',
        `SELECT project_id, target, approval, approval_timeout_ms, updated_at
           FROM resource.target_approvals WHERE project_id = $1 ORDER BY target`,
        [projectId],
      ),
    deleteTarget: async (projectId, target) =>
      (
        await db.query(
          'target_approvals_delete',
          `DELETE FROM resource.target_approvals WHERE project_id = $1 AND target = $2
           RETURNING target`,
          [projectId, target],
        )
      ).length === 1,
  };
}
