// The skills domain's repositories, made over one Db (a pool or a transaction).
// Skills and where they run: skill versions and environments, async skill tasks and jobs, sandboxes and their reaping, project files, artifacts and documents.
import type { Db } from '../core/db.ts';
import { createSkillsRepo, type SkillsRepo } from './skills.ts';
import { createSkillEnvsRepo, type SkillEnvsRepo } from './skill-envs.ts';
import { createSkillJobsRepo, type SkillJobsRepo } from './skill-jobs.ts';
import { createSkillTasksRepo, type SkillTasksRepo } from './skill-tasks.ts';
import { createSandboxesRepo, type SandboxesRepo } from './sandboxes.ts';
import { createSandboxReapRepo, type SandboxReapRepo } from './sandbox-reap.ts';
import { createFilesRepo, type FilesRepo } from './files.ts';
import { createArtifactsRepo, type ArtifactsRepo } from './artifacts.ts';
import { createDocumentsRepo, type DocumentsRepo } from './documents.ts';

export interface SkillsStore {
  readonly skills: SkillsRepo;
  readonly skillEnvs: SkillEnvsRepo;
  readonly skillJobs: SkillJobsRepo;
  readonly skillTasks: SkillTasksRepo;
  readonly sandboxes: SandboxesRepo;
  readonly sandboxReap: SandboxReapRepo;
  readonly files: FilesRepo;
  readonly artifacts: ArtifactsRepo;
  readonly documents: DocumentsRepo;
}

export function createSkillsStore(db: Db): SkillsStore {
  return {
    skills: createSkillsRepo(db),
    skillEnvs: createSkillEnvsRepo(db),
    skillJobs: createSkillJobsRepo(db),
    skillTasks: createSkillTasksRepo(db),
    sandboxes: createSandboxesRepo(db),
    sandboxReap: createSandboxReapRepo(db),
    files: createFilesRepo(db),
    artifacts: createArtifactsRepo(db),
    documents: createDocumentsRepo(db),
  };
}
