export { createStore } from './store.ts';
export type { Store, TxStore } from './store.ts';
export { CardKind } from './calls/cards.ts';
export type { Card, CardsRepo } from './calls/cards.ts';
export { ExecutionStatus, cappedArguments } from './calls/executions.ts';
export type { Execution, ExecutionsRepo, StartExecution } from './calls/executions.ts';
export type {
  ExecutionFilter,
  CostTotal,
  ExecutionMetrics,
  HistoryKey,
  HistoryRow,
  HistorySummary,
  MostUsedTool,
} from './ops/execution-stats.ts';
export type { InboxItem, InboxRepo, NewTaskItem } from './inbox.ts';
export { TaskState } from './calls/tasks.ts';
export type { Task, NewTask, TasksRepo } from './calls/tasks.ts';
export type { CancelTaskOutcome, CanceledCall } from './calls/task-cancel.ts';
export type { RetentionBatch, RetentionRepo } from './ops/retention.ts';
export type { ClaimKey, IdempotencyKeysRepo, KeyClaim } from './calls/idempotency-keys.ts';
export type { RecordToolResult, RecordedResult, ResultsRepo } from './calls/results.ts';
export { isRetryablePgError, toStoreError } from './core/errors.ts';
export { createPool } from './core/pool.ts';
export { isReportedOutage } from './core/outage.ts';
export type { PoolOptions } from './core/pool.ts';
export {
  migrate,
  loadMigrations,
  ensureDatabase,
  MigrationError,
  MIGRATIONS_DIR,
} from './core/migrate.ts';
export type { Migration, MigrateOptions, EnsureDatabaseOptions } from './core/migrate.ts';
export { KeyRole, PROJECT_KEY_PATTERN, hashKey, mergeSettings } from './registry/projects.ts';
export type {
  Project,
  ApiKey,
  ProjectsRepo,
  ProjectQuotas,
  ProjectSettings,
  ProjectSettingsPatch,
} from './registry/projects.ts';
export { ToolOrigin } from './registry/tools.ts';
export type {
  ToolRecord,
  NewTool,
  ToolFacets,
  ToolFilter,
  ToolPatch,
  ToolUsage,
  ToolsRepo,
  ToolAnnotations,
} from './registry/tools.ts';
export { InternalTool } from './agents/profiles.ts';
export type {
  ProfileRecord,
  NewProfile,
  ProfilePatch,
  ProfileUpdate,
  ProfileDelete,
  ProfilesRepo,
} from './agents/profiles.ts';
export type {
  AgentRecord,
  AgentToolRecord,
  NewAgent,
  AgentPatch,
  AgentWrite,
  AttachTool,
  AgentsRepo,
} from './agents/agents.ts';
export type { SkillRecord, SkillVersion, NewSkillVersion, SkillsRepo } from './skills/skills.ts';
export type { ArtifactRecord, NewArtifact, ArtifactsRepo } from './skills/artifacts.ts';
export type {
  LockAttempt,
  NewSandbox,
  SandboxProviderKind,
  SandboxListing,
  SandboxRecord,
  SandboxState,
  SandboxesRepo,
  SessionLock,
} from './skills/sandboxes.ts';
export type {
  HeadProcess,
  ReapClaim,
  ReapFailure,
  ReapReason,
  SandboxReapRepo,
} from './skills/sandbox-reap.ts';
export { SkillTaskStatus } from './skills/skill-tasks.ts';
export { SkillJobStepStatus } from './skills/skill-jobs.ts';
export type { SkillJobRecord, SkillJobStep, NewSkillJob, SkillJobsRepo } from './skills/skill-jobs.ts';
export type {
  SkillTaskRecord,
  NewSkillTask,
  FinishSkillTask,
  SkillTasksRepo,
} from './skills/skill-tasks.ts';
export type { ServiceInstanceRecord, InstanceHeartbeat, InstancesRepo } from './core/instances.ts';
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
} from './agents/threads.ts';
export { McpServerState, McpTransport } from './registry/mcp-servers.ts';
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
} from './registry/mcp-servers.ts';
export type { McpTaskRecord, McpTasksRepo } from './calls/mcp-tasks.ts';
export { importSource } from './registry/openapi-imports.ts';
export { definitionHash } from './registry/tool-definitions.ts';
export type { PendingDefinition, ToolDefinition } from './registry/tool-definitions.ts';
export type { ImportedTool, ImportOutcome, OpenApiImportsRepo } from './registry/openapi-imports.ts';
export { createSecretBox, SecretsKeyError } from './registry/secrets.ts';
export type { SealedSecret, SecretBox, SecretListing, SecretsRepo } from './registry/secrets.ts';
export type { LockedOAuthTokens, OAuthTokenRow, OAuthTokensRepo } from './registry/oauth-tokens.ts';
export { apiBucket, busBucket } from './calls/rate-buckets.ts';
export type { BucketSpec, RateBucketsRepo } from './calls/rate-buckets.ts';
export { Quota } from './calls/quotas.ts';
export type { Admission, QuotaRefusal, QuotasRepo } from './calls/quotas.ts';
export type { BusCredential, BusCredentialsRepo } from './registry/bus-credentials.ts';
export { CatchUp, ScheduleKind } from './agents/schedules.ts';
export type { Firing, NewFiring, NewSchedule, Schedule, SchedulesRepo } from './agents/schedules.ts';
export { FilePathError, normalizeFilePath } from './skills/files.ts';
export type { FileEntry, FileLimits, FilesRepo, ProjectFile, WriteOutcome } from './skills/files.ts';
export type { Document, DocumentHit, DocumentsRepo, NewDocument } from './skills/documents.ts';
export { SkillEnvStatus } from './skills/skill-envs.ts';
export type { SkillEnvKey, SkillEnvRecord, SkillEnvsRepo, UnusedSkillEnv } from './skills/skill-envs.ts';
export type {
  ArtifactListing,
  ConsoleReadsRepo,
  MinuteBucket,
  TaskListing,
  ToolFailures,
} from './ops/console-reads.ts';
export { ApprovalStatus } from './calls/approvals.ts';
export type {
  ApprovalPolicyRow,
  ApprovalRecord,
  ApprovalsRepo,
  DecidedApproval,
  Decision,
  ParkCall,
  RequiredBy,
  TargetApproval,
} from './calls/approvals.ts';
