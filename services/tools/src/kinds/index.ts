// The kinds this service runs, one executor each. The mcp kind adds its executor here
// (kinds/mcp.ts) next to http; the resolver picks the executor by the tool's origin.
import type { Egress } from '../egress.ts';
import type { McpPool } from '../mcp/pool.ts';
import { createHttpExecutor } from './http.ts';
import type { KindExecutors } from './kind.ts';
import { createMcpExecutor } from './mcp.ts';

export interface KindDeps {
  egress: Egress;
  maxResultBytes: number;
  /** The MCP connections of this instance (shared with discovery). */
  mcpPool: McpPool;
}

export function createKindExecutors(deps: KindDeps): KindExecutors {
  return {
    http: createHttpExecutor({ egress: deps.egress, maxResultBytes: deps.maxResultBytes }),
    mcp: createMcpExecutor({ pool: deps.mcpPool }),
  };
}

export { ExecutableKind, UpstreamFailure } from './kind.ts';
export type {
  AttemptContext,
  KindExecutor,
  KindExecutors,
  UpstreamFailureOptions,
} from './kind.ts';
