// The calls domain's repositories, made over one Db (a pool or a transaction).
// Tool calls: their cards, execution log and results, idempotency keys, rate buckets and quotas, approvals, the input requests of MCP servers and MCP async tasks.
import type { Db } from '../core/db.ts';
import { createCardsRepo, type CardsRepo } from './cards.ts';
import { createExecutionsRepo, type ExecutionsRepo } from './executions.ts';
import { createResultsRepo, type ResultsRepo } from './results.ts';
import { createIdempotencyKeysRepo, type IdempotencyKeysRepo } from './idempotency-keys.ts';
import { createRateBucketsRepo, type RateBucketsRepo } from './rate-buckets.ts';
import { createQuotasRepo, type QuotasRepo } from './quotas.ts';
import { createApprovalsRepo, type ApprovalsRepo } from './approvals.ts';
import { createMcpTasksRepo, type McpTasksRepo } from './mcp-tasks.ts';
import { createInputRequestsRepo, type InputRequestsRepo } from './input-requests.ts';

export interface CallsStore {
  readonly cards: CardsRepo;
  readonly executions: ExecutionsRepo;
  readonly results: ResultsRepo;
  readonly idempotencyKeys: IdempotencyKeysRepo;
  readonly rateBuckets: RateBucketsRepo;
  readonly quotas: QuotasRepo;
  readonly approvals: ApprovalsRepo;
  readonly mcpTasks: McpTasksRepo;
  readonly inputRequests: InputRequestsRepo;
}

export function createCallsStore(db: Db): CallsStore {
  return {
    cards: createCardsRepo(db),
    executions: createExecutionsRepo(db),
    results: createResultsRepo(db),
    idempotencyKeys: createIdempotencyKeysRepo(db),
    rateBuckets: createRateBucketsRepo(db),
    quotas: createQuotasRepo(db),
    approvals: createApprovalsRepo(db),
    mcpTasks: createMcpTasksRepo(db),
    inputRequests: createInputRequestsRepo(db),
  };
}
