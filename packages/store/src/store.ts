// The store a process builds once over its pool: one repository per table group.
import type pg from 'pg';
import { createCardsRepo, type CardsRepo } from './calls/cards.ts';
import { createDb } from './core/db.ts';
import { createExecutionsRepo, type ExecutionsRepo } from './calls/executions.ts';
import { createInboxRepo, type InboxRepo } from './inbox.ts';
import { createTasksRepo, type TasksRepo } from './calls/tasks.ts';
import { createProjectsRepo, type ProjectsRepo } from './registry/projects.ts';
import { createToolsRepo, type ToolsRepo } from './registry/tools.ts';
import { createProfilesRepo, type ProfilesRepo } from './agents/profiles.ts';
import { createAgentsRepo, type AgentsRepo } from './agents/agents.ts';
import { createSkillsRepo, type SkillsRepo } from './skills/skills.ts';
import { createArtifactsRepo, type ArtifactsRepo } from './skills/artifacts.ts';
import { createSandboxesRepo, type SandboxesRepo } from './skills/sandboxes.ts';
import { createSandboxReapRepo, type SandboxReapRepo } from './skills/sandbox-reap.ts';
import { createSkillTasksRepo, type SkillTasksRepo } from './skills/skill-tasks.ts';
import { createInstancesRepo, type InstancesRepo } from './core/instances.ts';
import { createSkillJobsRepo, type SkillJobsRepo } from './skills/skill-jobs.ts';
import { createQuotasRepo, type QuotasRepo } from './calls/quotas.ts';
import { createSkillEnvsRepo, type SkillEnvsRepo } from './skills/skill-envs.ts';
import type { Db } from './core/db.ts';
import { createResultsRepo, type ResultsRepo } from './calls/results.ts';
import { createTurnsRepo, type TurnsRepo } from './turns.ts';
import { createThreadsRepo, type ThreadsRepo } from './agents/threads.ts';
import { createMcpServersRepo, type McpServersRepo } from './registry/mcp-servers.ts';
import { createOpenApiImportsRepo, type OpenApiImportsRepo } from './registry/openapi-imports.ts';
import { createMcpTasksRepo, type McpTasksRepo } from './calls/mcp-tasks.ts';
import { createSecretsRepo, type SecretsRepo } from './registry/secrets.ts';
import { createOAuthTokensRepo, type OAuthTokensRepo } from './registry/oauth-tokens.ts';
import { createRateBucketsRepo, type RateBucketsRepo } from './calls/rate-buckets.ts';
import { createBusCredentialsRepo, type BusCredentialsRepo } from './registry/bus-credentials.ts';
import { createSchedulesRepo, type SchedulesRepo } from './agents/schedules.ts';
import { createFilesRepo, type FilesRepo } from './skills/files.ts';
import { createDocumentsRepo, type DocumentsRepo } from './skills/documents.ts';
import { createRetentionRepo, type RetentionRepo } from './ops/retention.ts';
import { createConsoleReadsRepo, type ConsoleReadsRepo } from './ops/console-reads.ts';
import { createApprovalsRepo, type ApprovalsRepo } from './calls/approvals.ts';
import { createIdempotencyKeysRepo, type IdempotencyKeysRepo } from './calls/idempotency-keys.ts';

export interface Store {
  readonly pool: pg.Pool;
  readonly cards: CardsRepo;
  readonly executions: ExecutionsRepo;
  readonly results: ResultsRepo;
  readonly inbox: InboxRepo;
  readonly tasks: TasksRepo;
  readonly projects: ProjectsRepo;
  readonly tools: ToolsRepo;
  readonly skills: SkillsRepo;
  readonly profiles: ProfilesRepo;
  readonly agents: AgentsRepo;
  readonly artifacts: ArtifactsRepo;
  readonly sandboxes: SandboxesRepo;
  readonly sandboxReap: SandboxReapRepo;
  readonly skillTasks: SkillTasksRepo;
  readonly instances: InstancesRepo;
  readonly skillJobs: SkillJobsRepo;
  readonly turns: TurnsRepo;
  readonly threads: ThreadsRepo;
  readonly mcpServers: McpServersRepo;
  readonly openapiImports: OpenApiImportsRepo;
  readonly mcpTasks: McpTasksRepo;
  readonly secrets: SecretsRepo;
  readonly oauthTokens: OAuthTokensRepo;
  readonly rateBuckets: RateBucketsRepo;
  readonly quotas: QuotasRepo;
  readonly busCredentials: BusCredentialsRepo;
  readonly schedules: SchedulesRepo;
  readonly files: FilesRepo;
  readonly documents: DocumentsRepo;
  readonly retention: RetentionRepo;
  readonly skillEnvs: SkillEnvsRepo;
  readonly consoleReads: ConsoleReadsRepo;
  readonly approvals: ApprovalsRepo;
  readonly idempotencyKeys: IdempotencyKeysRepo;
  /** Runs `fn` with repositories bound to one transaction. */
  tx<T>(fn: (s: TxStore) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** The repositories that may take part in a transaction. */
export interface TxStore {
  readonly projects: ProjectsRepo;
  readonly tools: ToolsRepo;
  readonly tasks: TasksRepo;
  readonly inbox: InboxRepo;
  readonly schedules: SchedulesRepo;
  readonly threads: ThreadsRepo;
}

function txRepos(db: Db): TxStore {
  return {
    projects: createProjectsRepo(db),
    tools: createToolsRepo(db),
    tasks: createTasksRepo(db),
    inbox: createInboxRepo(db),
    schedules: createSchedulesRepo(db),
    threads: createThreadsRepo(db),
  };
}

export function createStore(pool: pg.Pool): Store {
  const db = createDb(pool);
  return {
    ...txRepos(db),
    tx: (fn) => db.tx((inner) => fn(txRepos(inner))),
    pool,
    cards: createCardsRepo(db),
    executions: createExecutionsRepo(db),
    results: createResultsRepo(db),
    profiles: createProfilesRepo(db),
    agents: createAgentsRepo(db),
    skills: createSkillsRepo(db),
    artifacts: createArtifactsRepo(db),
    sandboxes: createSandboxesRepo(db),
    sandboxReap: createSandboxReapRepo(db),
    skillTasks: createSkillTasksRepo(db),
    instances: createInstancesRepo(db),
    skillJobs: createSkillJobsRepo(db),
    turns: createTurnsRepo(db),
    mcpServers: createMcpServersRepo(db),
    openapiImports: createOpenApiImportsRepo(db),
    mcpTasks: createMcpTasksRepo(db),
    secrets: createSecretsRepo(db),
    oauthTokens: createOAuthTokensRepo(db),
    rateBuckets: createRateBucketsRepo(db),
    quotas: createQuotasRepo(db),
    busCredentials: createBusCredentialsRepo(db),
    files: createFilesRepo(db),
    documents: createDocumentsRepo(db),
    retention: createRetentionRepo(db),
    skillEnvs: createSkillEnvsRepo(db),
    consoleReads: createConsoleReadsRepo(db),
    approvals: createApprovalsRepo(db),
    idempotencyKeys: createIdempotencyKeysRepo(db),
    close: () => pool.end(),
  };
}
