export { createCallsStore } from './store.ts';
export type { CallsStore } from './store.ts';
export { CardKind } from './cards.ts';
export type { Card, CardsRepo } from './cards.ts';
export { ExecutionStatus, cappedArguments } from './executions.ts';
export type { Execution, ExecutionsRepo, StartExecution } from './executions.ts';
export type {
  ExecutionFilter,
  CostTotal,
  ExecutionMetrics,
  HistoryKey,
  HistoryRow,
  HistorySummary,
  MostUsedTool,
} from './execution-stats.ts';
export type { ClaimKey, IdempotencyKeysRepo, KeyClaim } from './idempotency-keys.ts';
export type { RecordToolResult, RecordedResult, ResultsRepo } from './results.ts';
export type { McpTaskRecord, McpTasksRepo } from './mcp-tasks.ts';
export { apiBucket, busBucket } from './rate-buckets.ts';
export type { BucketSpec, RateBucketsRepo } from './rate-buckets.ts';
export { Quota } from './quotas.ts';
export type { Admission, QuotaRefusal, QuotasRepo } from './quotas.ts';
export { ApprovalStatus } from './approvals.ts';
export type {
  ApprovalPolicyRow,
  ApprovalRecord,
  ApprovalsRepo,
  DecidedApproval,
  Decision,
  ParkCall,
  RequiredBy,
  TargetApproval,
} from './approvals.ts';
export { InputAction, InputRequestStatus } from './input-requests.ts';
export type {
  InputAnswer,
  InputRequestRecord,
  InputRequestsRepo,
  NewInputRequest,
} from './input-requests.ts';
