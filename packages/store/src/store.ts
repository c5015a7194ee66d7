// The store a process builds once over its pool: one repository per table group.
import type pg from 'pg';
import { createCardsRepo, type CardsRepo } from './cards.ts';
import { createDb } from './db.ts';
import { createExecutionsRepo, type ExecutionsRepo } from './executions.ts';
import { createInboxRepo, type InboxRepo } from './inbox.ts';
import { createTasksRepo, type TasksRepo } from './tasks.ts';
import { createProjectsRepo, type ProjectsRepo } from './projects.ts';
import { createToolsRepo, type ToolsRepo } from './tools.ts';
import { createProfilesRepo, type ProfilesRepo } from './profiles.ts';
import { createAgentsRepo, type AgentsRepo } from './agents.ts';
import { createSkillsRepo, type SkillsRepo } from './skills.ts';
import { createArtifactsRepo, type ArtifactsRepo } from './artifacts.ts';
import { createSandboxesRepo, type SandboxesRepo } from './sandboxes.ts';
import { createSandboxReapRepo, type SandboxReapRepo } from './sandbox-reap.ts';
import { createSkillTasksRepo, type SkillTasksRepo } from './skill-tasks.ts';
import { createInstancesRepo, type InstancesRepo } from './instances.ts';
import { createSkillJobsRepo, type SkillJobsRepo } from './skill-jobs.ts';
import { createQuotasRepo, type QuotasRepo } from './quotas.ts';
import { createSkillEnvsRepo, type SkillEnvsRepo } from './skill-envs.ts';
import type { Db } from './db.ts';
import { createResultsRepo, type ResultsRepo } from './results.ts';
import { createTurnsRepo, type TurnsRepo } from './turns.ts';
import { createThreadsRepo, type ThreadsRepo } from './threads.ts';
import { createMcpServersRepo, type McpServersRepo } from './mcp-servers.ts';
import { createOpenApiImportsRepo, type OpenApiImportsRepo } from './openapi-imports.ts';
import { createMcpTasksRepo, type McpTasksRepo } from './mcp-tasks.ts';
import { createSecretsRepo, type SecretsRepo } from './secrets.ts';
import { createOAuthTokensRepo, type OAuthTokensRepo } from './oauth-tokens.ts';
import { createRateBucketsRepo, type RateBucketsRepo } from './rate-buckets.ts';
import { createBusCredentialsRepo, type BusCredentialsRepo } from './bus-credentials.ts';
import { createSchedulesRepo, type SchedulesRepo } from './schedules.ts';
import { createFilesRepo, type FilesRepo } from './files.ts';
import { createDocumentsRepo, type DocumentsRepo } from './documents.ts';
import { createRetentionRepo, type RetentionRepo } from './retention.ts';
import { createConsoleReadsRepo, type ConsoleReadsRepo } from './console-reads.ts';
import { createApprovalsRepo, type ApprovalsRepo } from './approvals.ts';
import { createInputRequestsRepo, type InputRequestsRepo } from './input-requests.ts';
import { createIdempotencyKeysRepo, type IdempotencyKeysRepo } from './idempotency-keys.ts';

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
  readonly inputRequests: InputRequestsRepo;
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
    inputRequests: createInputRequestsRepo(db),
    idempotencyKeys: createIdempotencyKeysRepo(db),
    close: () => pool.end(),
  };
}
