// Builds the tools service from its configuration: NATS, JetStream provisioning, the Postgres
// store, the cached registry, the egress guard, the kind executors (http and mcp), the MCP
// connection pool with its discovery responder, and one registry tool service consuming every
// tool call that is not the skills service's.
// `main.ts` runs it as a process; tests start it the same way.
import type { Logger } from 'pino';
import type { SandboxProvider } from '@toolmesh/sandbox';
import { createBus } from '@toolmesh/bus';
import type { Config } from '@toolmesh/config';
import {
  connectNatsFromConfig,
  createSandboxProviderFromConfig,
  createStoreFromConfig,
  instanceIdOf,
  streamSettingsOf,
  startHealthServer,
} from '@toolmesh/service';
import {
  createSecretBox,
  type CallsStore,
  type RegistryStore,
  type SkillsStore,
  type Store,
} from '@toolmesh/store';
import { createRegistry, createToolService, limitsFromConfig } from '@toolmesh/tool-service';
import { createEgress } from './egress.ts';
import { createKindExecutors } from './kinds/index.ts';
import { createAutoRefresh, serveDiscovery } from './mcp/discovery.ts';
import { serveMcpRpc } from './mcp/rpc.ts';
import { createMcpPool } from './mcp/pool.ts';
import { createNoticePublisher } from './mcp/notify.ts';
import { createResolver } from './resolver.ts';
import { createSecretReader } from './secrets.ts';
import { createOAuthTokens } from './oauth.ts';

/** The store domains this process uses: the tool runtime's (calls, registry) and skills' for the
 * sandbox sessions and package environments of stdio MCP servers. */
type ToolsProcessStore = CallsStore & RegistryStore & SkillsStore & Pick<Store, 'close'>;

/** The durable consumer and card author of this service. */
export const TOOLS_SERVICE = 'tools';

export interface ToolsService {
  readonly instanceId: string;
  /** The port /healthz answers on. */
  readonly healthPort: number;
  stop(graceMs?: number): Promise<void>;
}

export async function startToolsService(config: Config, logger: Logger): Promise<ToolsService> {
  const instanceId = instanceIdOf(config);
  const log = logger.child({ instance: instanceId });
  const nc = await connectNatsFromConfig(config, `tools:${instanceId}`, log);
  const bus = await createBus({
    nc,
    root: config.nats.subject_root,
    logger: log,
    drainTimeoutMs: config.nats.drain_timeout_ms,
  });
  await bus.provision(streamSettingsOf(config));
  const store: ToolsProcessStore = createStoreFromConfig(config, `tools:${instanceId}`, log);
  const egress = createEgress(config.tools.allowed_private_hosts);
  const box = createSecretBox(config.secrets.key);
  const secrets = createSecretReader(store, box);
  const oauth = createOAuthTokens({
    store,
    box,
    egress,
    insecureHosts: config.tools.allowed_private_hosts,
    refreshMarginMs: config.tools.oauth_refresh_margin_ms,
    timeoutMs: config.tools.oauth_token_timeout_ms,
    logger: log,
  });
  // stdio MCP servers are tenants' programs: they run in sandbox sessions of their project. The
  // provider is made when the first one starts, so hosts without stdio servers need no sandbox.
  let provider: Promise<SandboxProvider> | undefined;
  const sandboxes = () => {
    provider ??= createSandboxProviderFromConfig(config, log);
    provider.catch(() => (provider = undefined));
    return provider;
  };
  // A server's tools/list_changed refreshes its registry rows (discovery needs the pool: bound late).
  const discoveryDeps = () => ({
    bus,
    store,
    pool: mcpPool,
    timeoutMs: config.tools.mcp_discovery_timeout_ms,
    pinDefinitions: config.tools.pin_definitions,
    logger: log,
  });
  const autoRefresh = createAutoRefresh(discoveryDeps);
  const mcpPool = createMcpPool({
    onToolsChanged: autoRefresh,
    onNotification: createNoticePublisher({ bus, logger: log }),
    store,
    sandboxes,
    egress,
    instanceId,
    idleTtlSec: config.sandbox.idle_ttl_sec,
    hardTtlSec: config.sandbox.hard_ttl_sec,
    secret: (project, name) => secrets.get(project, name),
    oauth,
    connectTimeoutMs: config.tools.mcp_connect_timeout_ms,
    idleCloseMs: config.tools.mcp_idle_close_ms,
    packages: {
      npmRegistry: config.skills.npm_registry,
      buildTimeoutMs: config.skills.env_build_timeout_ms,
      leaseMs: config.skills.env_lease_ms,
    },
    logger: log,
  });
  const executors = createKindExecutors({
    egress,
    maxResultBytes: config.tools.max_result_bytes,
    store,
    bus,
    config,
    instanceId,
    logger: log,
    mcpPool,
  });
  const discovery = serveDiscovery(discoveryDeps());
  const passthrough = serveMcpRpc({
    bus,
    pool: mcpPool,
    timeoutMs: config.tools.mcp_discovery_timeout_ms,
    logger: log,
  });
  const mcpWatch = mcpPool.watchRegistry(bus);
  const registry = createRegistry({
    store,
    bus,
    ttlMs: config.tools.registry_cache_ttl_ms,
    logger: log,
  });
  const service = createToolService({
    service: TOOLS_SERVICE,
    resolver: createResolver({
      store,
      secrets,
      oauth,
      registry,
      executors,
      defaults: config.tools,
      logger: log,
    }),
    bus,
    store,
    limits: limitsFromConfig(config.tools),
    instanceId,
    logger: log,
    callsPerMinute: config.quotas.bus_calls_per_minute,
  });
  await service.start();
  let stopping = false;
  const startedAt = new Date().toISOString();
  const health = await startHealthServer({
    host: config.tools.health_host,
    port: config.tools.health_port,
    key: 'tools.health_port',
    check: () => ({
      ok: !stopping && !nc.isClosed(),
      body: { instance_id: instanceId, started_at: startedAt, in_flight: service.inFlight() },
    }),
  });
  log.info({ health_port: health.port }, 'tools service started');
  return {
    instanceId,
    healthPort: health.port,
    stop: async (graceMs) => {
      stopping = true;
      discovery.unsubscribe();
      passthrough.unsubscribe();
      mcpWatch.unsubscribe();
      await service.stop(graceMs);
      registry.close();
      await health.close();
      await Promise.all(Object.values(executors).map((e) => e.close()));
      await (await provider?.catch(() => undefined))?.close();
      await egress.close();
      await bus.close();
      await store.close();
    },
  };
}
