// The row of the tool execution log (state.tool_executions), shared by its writes
// (executions.ts) and its reads (execution-stats.ts).
import { ResultStatus } from '@toolmesh/protocol';

export const ExecutionStatus = {
  queued: 'queued',
  /** Parked until someone approves or denies it (state.approvals). */
  awaiting_approval: 'awaiting_approval',
  running: 'running',
  ...ResultStatus,
} as const;
export type ExecutionStatus = (typeof ExecutionStatus)[keyof typeof ExecutionStatus];

export interface Execution {
  project_id: string;
  tool_call_id: string;
  channel: string;
  tool_name: string;
  target: string;
  agent_id: string | null;
  status: ExecutionStatus;
  error_code: string | null;
  instance_id: string;
  attempts: number;
  card_id: string | null;
  /** When the row was first written: queued by the api, or opened by the tool service. */
  created_at: Date;
  started_at: Date;
  finished_at: Date | null;
  duration_ms: number | null;
  /** The call's cost estimate (tool options `cost`), when its tool has one. */
  cost: number | null;
  cost_currency: string | null;
  /** The arguments as the caller sent them (null for a call rejected before they were read). */
  arguments: Record<string, unknown> | null;
  turn_id: string | null;
  task_id: string | null;
  /** The caller's context (protocol CallContext): a session id and metadata, when given. */
  session_id: string | null;
  context_metadata: Record<string, unknown> | null;
  /** The API key that started the call over HTTP. */
  key_id: string | null;
  /** The bus credential a publisher named (CG-Credential-Id), when it is one of the project's. */
  credential_id: string | null;
  /** The deadline the call asked for, when its row was written before its result. */
  timeout_ms: number | null;
}
