export { createAgentsStore } from './store.ts';
export type { AgentsStore } from './store.ts';
export { TaskState } from './tasks.ts';
export type { Task, NewTask, TasksRepo } from './tasks.ts';
export type { CancelTaskOutcome, CanceledCall } from './task-cancel.ts';
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
export type {
  NewThread,
  NextMessage,
  Thread,
  ThreadTurn,
  ThreadTurnsQuery,
  ThreadsRepo,
} from './threads.ts';
export { CatchUp, ScheduleKind } from './schedules.ts';
export type { Firing, NewFiring, NewSchedule, Schedule, SchedulesRepo } from './schedules.ts';
export type { InboxItem, InboxRepo, NewTaskItem } from './inbox.ts';
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
