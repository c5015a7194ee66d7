// The store a process builds once over its pool: one repository per table group.
import type pg from 'pg';
import { createCardsRepo, type CardsRepo } from './cards.ts';
import { createDb } from './db.ts';
import { createExecutionsRepo, type ExecutionsRepo } from './executions.ts';
import { createInboxRepo, type InboxRepo } from './inbox.ts';
import { createResultsRepo, type ResultsRepo } from './results.ts';

export interface Store {
  readonly pool: pg.Pool;
  readonly cards: CardsRepo;
  readonly executions: ExecutionsRepo;
  readonly results: ResultsRepo;
  readonly inbox: InboxRepo;
  close(): Promise<void>;
}

export function createStore(pool: pg.Pool): Store {
  const db = createDb(pool);
  return {
    pool,
    cards: createCardsRepo(db),
    executions: createExecutionsRepo(db),
    results: createResultsRepo(db),
    inbox: createInboxRepo(db),
    close: () => pool.end(),
  };
}
