export { createSkillsStore } from './store.ts';
export type { SkillsStore } from './store.ts';
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
export { FilePathError, normalizeFilePath } from './files.ts';
export type { FileEntry, FileLimits, FilesRepo, ProjectFile, WriteOutcome } from './files.ts';
export type { Document, DocumentHit, DocumentsRepo, NewDocument } from './documents.ts';
export { SkillEnvStatus } from './skill-envs.ts';
export type { SkillEnvKey, SkillEnvRecord, SkillEnvsRepo, UnusedSkillEnv } from './skill-envs.ts';
