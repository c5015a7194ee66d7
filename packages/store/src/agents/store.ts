// The agents domain's repositories, made over one Db (a pool or a transaction).
// Agents and their work: agents, profiles, tasks, threads, schedules, and (still at the package root while the turn is redesigned) the inbox and turns.
import type { Db } from '../core/db.ts';
import { createAgentsRepo, type AgentsRepo } from './agents.ts';
import { createProfilesRepo, type ProfilesRepo } from './profiles.ts';
import { createTasksRepo, type TasksRepo } from './tasks.ts';
import { createThreadsRepo, type ThreadsRepo } from './threads.ts';
import { createSchedulesRepo, type SchedulesRepo } from './schedules.ts';
import { createInboxRepo, type InboxRepo } from './inbox.ts';
import { createTurnsRepo, type TurnsRepo } from './turns.ts';

export interface AgentsStore {
  readonly agents: AgentsRepo;
  readonly profiles: ProfilesRepo;
  readonly tasks: TasksRepo;
  readonly threads: ThreadsRepo;
  readonly schedules: SchedulesRepo;
  readonly inbox: InboxRepo;
  readonly turns: TurnsRepo;
}

export function createAgentsStore(db: Db): AgentsStore {
  return {
    agents: createAgentsRepo(db),
    profiles: createProfilesRepo(db),
    tasks: createTasksRepo(db),
    threads: createThreadsRepo(db),
    schedules: createSchedulesRepo(db),
    inbox: createInboxRepo(db),
    turns: createTurnsRepo(db),
  };
}
