// The kinds this service runs, one executor each (kinds/http.ts, kinds/mcp.ts); the resolver
// picks the executor by the tool's origin. The mcp kind runs on the service's MCP pool, which
// discovery shares.
import type { Logger } from 'pino';
import type { Bus } from '@toolmesh/bus';
import type { Config } from '@toolmesh/config';
import type { CallsStore, RegistryStore } from '@toolmesh/store';
import type { Egress } from '../egress.ts';
import type { McpPool } from '../mcp/pool.ts';
import { createHttpExecutor } from './http.ts';
import type { KindExecutors } from './kind.ts';
import { createMcpExecutor } from './mcp.ts';
import { createSampler } from '../mcp/sampling.ts';

/** What executors are built from: everything the service holds, passed down once. */
export interface KindDeps {
  /** Outbound HTTP goes through its dispatcher (private addresses refused after DNS). */
  egress: Egress;
  maxResultBytes: number;
  /** For an MCP server's asks: the project's settings and its input requests. */
  store: CallsStore & RegistryStore;
  bus: Bus;
  config: Config;
  instanceId: string;
  logger: Logger;
  /** The MCP connections of this instance (shared with discovery). */
  mcpPool: McpPool;
}

export function createKindExecutors(deps: KindDeps): KindExecutors {
  return {
    http: createHttpExecutor({ egress: deps.egress, maxResultBytes: deps.maxResultBytes }),
    mcp: createMcpExecutor({
      pool: deps.mcpPool,
      asks: {
        bus: deps.bus,
        store: deps.store,
        sampler: createSampler(deps.config.llm),
        samplingLlm: deps.config.tools.mcp_sampling_llm,
        logger: deps.logger,
      },
    }),
  };
}

export { ExecutableKind, UpstreamFailure } from './kind.ts';
export type {
  AttemptContext,
  KindExecutor,
  KindExecutors,
  UpstreamFailureOptions,
} from './kind.ts';
