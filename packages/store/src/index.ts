export { createStore } from './store.ts';
export type { Store } from './store.ts';
export { CardKind } from './cards.ts';
export type { Card, CardsRepo } from './cards.ts';
export type { Execution, ExecutionStatus, ExecutionsRepo, StartExecution } from './executions.ts';
export type { InboxItem, InboxRepo } from './inbox.ts';
export type { RecordToolResult, RecordedResult, ResultsRepo } from './results.ts';
export { isRetryablePgError, toStoreError } from './errors.ts';
