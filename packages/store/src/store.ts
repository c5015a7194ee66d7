// The store a process builds once over its pool: the repositories of every domain (core,
// calls, registry, skills, agents, ops; each folder's index.ts is its front door). A process
// hands each of its parts only the domains it uses (e.g. `SkillsStore` for the sandbox reaper).
import type pg from 'pg';
import { createDb, type Db } from './core/db.ts';
import { createCoreStore, type CoreStore } from './core/store.ts';
import { createCallsStore, type CallsStore } from './calls/store.ts';
import { createRegistryStore, type RegistryStore } from './registry/store.ts';
import { createSkillsStore, type SkillsStore } from './skills/store.ts';
import { createAgentsStore, type AgentsStore } from './agents/store.ts';
import { createOpsStore, type OpsStore } from './ops/store.ts';
import { createProjectsRepo, type ProjectsRepo } from './registry/projects.ts';
import { createToolsRepo, type ToolsRepo } from './registry/tools.ts';
import { createTasksRepo, type TasksRepo } from './agents/tasks.ts';
import { createSchedulesRepo, type SchedulesRepo } from './agents/schedules.ts';
import { createThreadsRepo, type ThreadsRepo } from './agents/threads.ts';
import { createInboxRepo, type InboxRepo } from './agents/inbox.ts';

export interface Store
  extends CoreStore, CallsStore, RegistryStore, SkillsStore, AgentsStore, OpsStore {
  readonly pool: pg.Pool;
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
    ...createCoreStore(db),
    ...createCallsStore(db),
    ...createRegistryStore(db),
    ...createSkillsStore(db),
    ...createAgentsStore(db),
    ...createOpsStore(db),
    tx: (fn) => db.tx((inner) => fn(txRepos(inner))),
    pool,
    close: () => pool.end(),
  };
}
