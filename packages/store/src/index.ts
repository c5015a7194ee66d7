export { createStore } from './store.ts';
export type { Store, TxStore } from './store.ts';
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
export type { InboxItem, InboxRepo, NewTaskItem } from './inbox.ts';
export { TaskState } from './tasks.ts';
export type { Task, NewTask, TasksRepo } from './tasks.ts';
export type { CancelTaskOutcome, CanceledCall } from './task-cancel.ts';
export type { RetentionBatch, RetentionRepo } from './retention.ts';
export type { ClaimKey, IdempotencyKeysRepo, KeyClaim } from './idempotency-keys.ts';
export type { RecordToolResult, RecordedResult, ResultsRepo } from './results.ts';
export { isRetryablePgError, toStoreError } from './errors.ts';
export { createPool } from './pool.ts';
export { isReportedOutage } from './outage.ts';
export type { PoolOptions } from './pool.ts';
export {
  migrate,
  loadMigrations,
  ensureDatabase,
  MigrationError,
  MIGRATIONS_DIR,
} from './migrate.ts';
export type { Migration, MigrateOptions, EnsureDatabaseOptions } from './migrate.ts';
export { KeyRole, PROJECT_KEY_PATTERN, hashKey, mergeSettings } from './projects.ts';
export type {
  Project,
  ApiKey,
  ProjectsRepo,
  ProjectQuotas,
  ProjectSettings,
  ProjectSettingsPatch,
} from './projects.ts';
export { ToolOrigin } from './tools.ts';
export type {
  ToolRecord,
  NewTool,
  ToolFacets,
  ToolFilter,
  ToolPatch,
  ToolUsage,
  ToolsRepo,
  ToolAnnotations,
} from './tools.ts';
export { InternalTool } from './profiles.ts';
export type {
  ProfileRecord,
  NewProfile,
  ProfilePatch,
  ProfileUpdate,
  ProfileDelete,
  ProfilesRepo,
} from './profiles.ts';
export type {
  AgentRecord,
  AgentToolRecord,
  NewAgent,
  AgentPatch,
  AgentWrite,
  AttachTool,
  AgentsRepo,
} from './agents.ts';
export type { SkillRecord, SkillVersion, NewSkillVersion, SkillsRepo } from './skills.ts';
export type { ArtifactRecord, NewArtifact, ArtifactsRepo } from './artifacts.ts';
export type {
  LockAttempt,
  NewSandbox,
  SandboxProviderKind,
  SandboxListing,
  SandboxRecord,
  SandboxState,
  SandboxesRepo,
  SessionLock,
} from './sandboxes.ts';
export type {
  HeadProcess,
  ReapClaim,
  ReapFailure,
  ReapReason,
  SandboxReapRepo,
} from './sandbox-reap.ts';
export { SkillTaskStatus } from './skill-tasks.ts';
export { SkillJobStepStatus } from './skill-jobs.ts';
export type { SkillJobRecord, SkillJobStep, NewSkillJob, SkillJobsRepo } from './skill-jobs.ts';
export type {
  SkillTaskRecord,
  NewSkillTask,
  FinishSkillTask,
  SkillTasksRepo,
} from './skill-tasks.ts';
export type { ServiceInstanceRecord, InstanceHeartbeat, InstancesRepo } from './instances.ts';
export { TurnStatus } from './turns.ts';
export type {
  TurnRecord,
  TurnCallRecord,
  TurnScope,
  StepCall,
  CommitStep,
  FinishTurn,
  FinishedTurn,
  ClaimedTurn,
  Conversation,
  TurnsRepo,
  WokenTurn,
} from './turns.ts';
export type { AppliedInbox, StartedTurn, TimedOutCall } from './turn-events.ts';
export type { StepContext } from './step-context.ts';
export type {
  NewThread,
  NextMessage,
  Thread,
  ThreadTurn,
  ThreadTurnsQuery,
  ThreadsRepo,
} from './threads.ts';
export { McpServerState, McpTransport } from './mcp-servers.ts';
export type {
  DiscoveredTool,
  McpAuth,
  McpImportOutcome,
  McpImportSource,
  McpSecretHeader,
  McpServerPackage,
  ImportedMcpServer,
  McpServerRecord,
  McpServersRepo,
  McpSyncOutcome,
  McpToolSpec,
  NewMcpServer,
} from './mcp-servers.ts';
export type { McpTaskRecord, McpTasksRepo } from './mcp-tasks.ts';
export { importSource } from './openapi-imports.ts';
export { definitionHash } from './tool-definitions.ts';
export type { PendingDefinition, ToolDefinition } from './tool-definitions.ts';
export type { ImportedTool, ImportOutcome, OpenApiImportsRepo } from './openapi-imports.ts';
export { createSecretBox, SecretsKeyError } from './secrets.ts';
export type { SealedSecret, SecretBox, SecretListing, SecretsRepo } from './secrets.ts';
export type { LockedOAuthTokens, OAuthTokenRow, OAuthTokensRepo } from './oauth-tokens.ts';
export { apiBucket, busBucket } from './rate-buckets.ts';
export type { BucketSpec, RateBucketsRepo } from './rate-buckets.ts';
export { Quota } from './quotas.ts';
export type { Admission, QuotaRefusal, QuotasRepo } from './quotas.ts';
export type { BusCredential, BusCredentialsRepo } from './bus-credentials.ts';
export { CatchUp, ScheduleKind } from './schedules.ts';
export type { Firing, NewFiring, NewSchedule, Schedule, SchedulesRepo } from './schedules.ts';
export { FilePathError, normalizeFilePath } from './files.ts';
export type { FileEntry, FileLimits, FilesRepo, ProjectFile, WriteOutcome } from './files.ts';
export type { Document, DocumentHit, DocumentsRepo, NewDocument } from './documents.ts';
export { SkillEnvStatus } from './skill-envs.ts';
export type { SkillEnvKey, SkillEnvRecord, SkillEnvsRepo, UnusedSkillEnv } from './skill-envs.ts';
export type {
  ArtifactListing,
  ConsoleReadsRepo,
  MinuteBucket,
  TaskListing,
  ToolFailures,
} from './console-reads.ts';
export { InputAction, InputRequestStatus } from './input-requests.ts';
export type {
  InputAnswer,
  InputRequestRecord,
  InputRequestsRepo,
  NewInputRequest,
} from './input-requests.ts';
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
