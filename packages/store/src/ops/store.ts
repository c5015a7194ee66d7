// The ops domain's repositories, made over one Db (a pool or a transaction).
// Operating the deployment: retention of old rows and the console's reads.
import type { Db } from '../core/db.ts';
import { createRetentionRepo, type RetentionRepo } from './retention.ts';
import { createConsoleReadsRepo, type ConsoleReadsRepo } from './console-reads.ts';

export interface OpsStore {
  readonly retention: RetentionRepo;
  readonly consoleReads: ConsoleReadsRepo;
}

export function createOpsStore(db: Db): OpsStore {
  return {
    retention: createRetentionRepo(db),
    consoleReads: createConsoleReadsRepo(db),
  };
}
