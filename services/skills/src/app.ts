// Builds the skills service from its configuration: NATS, JetStream provisioning, the Postgres
// store and the tool-service runtime serving the builtin diagnostic tools. `main.ts` runs it as
// a process; tests start it the same way.
import type { Logger } from 'pino';
import { createBus } from '@toolmesh/bus';
import type { Config } from '@toolmesh/config';
import {
  connectNatsFromConfig,
  createArtifactStoreFromConfig,
  createSandboxProviderFromConfig,
  startHealthServer,
  createStoreFromConfig,
  instanceIdOf,
  streamSettingsOf,
} from '@toolmesh/service';
import {
  createRegistry,
  createToolService,
  limitsFromConfig,
  type ToolServiceLimits,
} from '@toolmesh/tool-service';
import { BUILTIN_TARGET, builtinTools } from './builtin/index.ts';
import { documentTools } from './builtin/documents.ts';
import { fileTools } from './builtin/files.ts';
import { pythonTool } from './builtin/python.ts';
import {
  SKILLS_TARGET,
  skillsTools,
  type EnvOptions,
  type SessionOptions,
  type SkillsLimits,
} from './skills/index.ts';
import type { CallsStore, CoreStore, RegistryStore, SkillsStore, Store } from '@toolmesh/store';
import { createReaper } from './reaper.ts';

/** The store domains this process uses: the tool runtime's (calls, registry), skills' own, and
 * core for the reaper's heartbeats. */
type SkillsProcessStore = CoreStore &
  CallsStore &
  RegistryStore &
  SkillsStore &
  Pick<Store, 'close'>;

export interface SkillsService {
  readonly instanceId: string;
  /** The port of GET /healthz and GET /metrics. */
  readonly healthPort: number;
  stop(graceMs?: number): Promise<void>;
}

/** The runtime's limits from [tools] (kept under this name for the skills service's callers). */
export const toolLimits: (t: Config['tools']) => ToolServiceLimits = limitsFromConfig;

/** The skills.* tools' limits, from the configuration. */
export function skillsLimits(config: Config): SkillsLimits {
  const k = config.skills;
  return {
    runTimeoutDefaultMs: k.run_timeout_default_ms,
    runTimeoutMaxMs: k.run_timeout_max_ms,
    taskTimeoutMaxMs: k.task_timeout_max_ms,
    stdoutTailBytes: k.stdout_tail_bytes,
    stderrTailBytes: k.stderr_tail_bytes,
    maxInputBytes: k.max_input_bytes,
    maxOutputBytes: k.max_output_bytes,
    zip: {
      maxZipBytes: k.max_zip_bytes,
      maxEntries: k.max_entries,
      maxUncompressedBytes: k.max_uncompressed_bytes,
    },
  };
}

/** Where skill dependencies come from and how long a build may take, from [skills]. */
export function envOptions(config: Config): EnvOptions {
  const k = config.skills;
  return {
    pythonIndexes: k.package_indexes,
    npmRegistry: k.npm_registry,
    downloadHosts: k.package_download_hosts,
    buildTimeoutMs: k.env_build_timeout_ms,
    leaseMs: k.env_lease_ms,
  };
}

/** Sandbox reuse, TTLs and locks, from the configuration. */
export function sessionOptions(s: Config['sandbox']): SessionOptions {
  return {
    reuseMode: s.reuse_mode,
    idleTtlSec: s.idle_ttl_sec,
    hardTtlSec: s.hard_ttl_sec,
    lockWaitMs: s.lock_wait_ms,
    lockMarginMs: s.lock_margin_ms,
  };
}

export async function startSkillsService(config: Config, logger: Logger): Promise<SkillsService> {
  const instanceId = instanceIdOf(config);
  const log = logger.child({ instance: instanceId });
  const nc = await connectNatsFromConfig(config, `skills:${instanceId}`, log);
  const bus = await createBus({
    nc,
    root: config.nats.subject_root,
    logger: log,
    drainTimeoutMs: config.nats.drain_timeout_ms,
  });
  await bus.provision(streamSettingsOf(config));
  const store: SkillsProcessStore = createStoreFromConfig(config, `skills:${instanceId}`, log);
  const sandboxes = await createSandboxProviderFromConfig(config, log);
  // A tool the project switched off in its registry fails with tool_disabled on the bus too.
  const registry = createRegistry({
    store,
    bus,
    ttlMs: config.tools.registry_cache_ttl_ms,
    logger: log,
  });
  const common = {
    bus,
    store,
    limits: toolLimits(config.tools),
    instanceId,
    logger: log,
    registry,
    // One count per project for both targets: builtin.sleep holds a slot as well as run_cmd.
    callsPerProject: config.quotas.calls_per_project,
    callsPerMinute: config.quotas.bus_calls_per_minute,
  };
  const skillsDeps = {
    store,
    artifacts: createArtifactStoreFromConfig(config),
    sandboxes,
    sessions: sessionOptions(config.sandbox),
    limits: skillsLimits(config),
    envs: envOptions(config),
    quotas: {
      sandboxesPerProject: config.quotas.sandboxes_per_project,
      runningTasksPerProject: config.quotas.running_tasks_per_project,
    },
    bus,
    instanceId,
    logger: log,
  };
  const services = [
    createToolService({
      ...common,
      target: BUILTIN_TARGET,
      tools: [
        ...builtinTools,
        pythonTool(skillsDeps, config.builtin),
        ...fileTools(store, config.builtin),
        ...documentTools(store, config.builtin),
      ],
    }),
    createToolService({ ...common, target: SKILLS_TARGET, tools: skillsTools(skillsDeps) }),
  ];
  // Heads a dead process left `running` end before this instance takes calls.
  const reaper = createReaper({
    store,
    instanceId,
    intervalMs: config.skills.reaper_interval_ms,
    logger: log,
  });
  await reaper.runOnce();
  reaper.start();
  for (const s of services) await s.start();
  let stopped = false;
  let stopping: Promise<void> | undefined;
  const startedAt = new Date().toISOString();
  const health = await startHealthServer({
    host: config.skills.health_host,
    port: config.skills.health_port,
    key: 'skills.health_port',
    check: () => ({
      ok: !stopped && !nc.isClosed(),
      body: {
        instance_id: instanceId,
        started_at: startedAt,
        in_flight: services.reduce((n, s) => n + s.inFlight(), 0),
      },
    }),
  });
  log.info({ health_port: health.port }, 'skills service listening for health and metrics');
  return {
    instanceId,
    healthPort: health.port,
    // Once: a second stop (a test's fixture after the test's own) waits for the first.
    stop: (graceMs) =>
      (stopping ??= (async () => {
        stopped = true;
        await health.close();
        await reaper.stop();
        await Promise.all(services.map((s) => s.stop(graceMs)));
        registry.close();
        await sandboxes.close();
        await bus.close();
        await store.close();
      })()),
  };
}
