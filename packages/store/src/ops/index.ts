export { createOpsStore } from './store.ts';
export type { OpsStore } from './store.ts';
export type { RetentionBatch, RetentionRepo } from './retention.ts';
export type {
  ArtifactListing,
  ConsoleReadsRepo,
  MinuteBucket,
  TaskListing,
  ToolFailures,
} from './console-reads.ts';
