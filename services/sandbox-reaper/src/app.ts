// Builds the sandbox-reaper from its configuration: the store, the providers it destroys
// through, the /healthz server, and the loop: a pass every reaper.interval_ms (at once again
// when a pass took a full batch, so a backlog drains), each preceded by a heartbeat in
// state.service_instances that the api can show, and followed by the removal of installed
// environments nothing uses any more (envs.ts). stop() lets the pass in flight finish.
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Config } from '@toolmesh/config';
import { createStoreFromConfig, instanceIdOf, startHealthServer } from '@toolmesh/service';
import type { CallsStore, CoreStore, OpsStore, SkillsStore, Store } from '@toolmesh/store';
import { reaperHealth, type HealthState } from './health.ts';
import { destroyersFromConfig, type Destroyers } from './providers.ts';
import { collectUnusedEnvs } from './envs.ts';
import { createSandboxReaper } from './reaper.ts';
import { startRetention, type RetentionLoop } from './retention.ts';

export const REAPER_SERVICE = 'sandbox-reaper';

/** The store domains this process uses: core for its heartbeats, skills' sandboxes and
 * environments, and the executions (calls) that retention (ops) removes. */
type ReaperProcessStore = CoreStore & CallsStore & SkillsStore & OpsStore & Pick<Store, 'close'>;

export interface ReaperService {
  readonly instanceId: string;
  /** The port /healthz listens on. */
  readonly healthPort: number;
  readonly health: HealthState;
  /** The execution log's retention (executions only when executions_max_age_hours > 0). */
  readonly retention: RetentionLoop;
  stop(): Promise<void>;
}

export interface ReaperServiceOptions {
  /** Providers to destroy through; by default built from the configuration. */
  destroyers?: Destroyers;
}

export async function startReaperService(
  config: Config,
  logger: Logger,
  opts: ReaperServiceOptions = {},
): Promise<ReaperService> {
  const instanceId = instanceIdOf(config);
  const log = logger.child({ instance: instanceId });
  const r = config.reaper;
  const store: ReaperProcessStore = createStoreFromConfig(
    config,
    `${REAPER_SERVICE}:${instanceId}`,
    log,
  );
  const destroyers = opts.destroyers ?? (await destroyersFromConfig(config, store, log));
  const reaper = createSandboxReaper({
    store,
    destroyers,
    owner: `reaper:${instanceId}`,
    batchSize: r.batch_size,
    concurrency: r.concurrency,
    claimMs: r.claim_ttl_ms,
    backoff: { baseMs: r.retry_base_ms, maxMs: r.retry_max_ms },
    logger: log,
  });
  const startedAt = new Date();
  const health: HealthState = {
    instanceId,
    startedAt,
    lastPassAt: undefined,
    lastPass: undefined,
    lastError: undefined,
    passes: 0,
    totals: { taken: 0, destroyed: 0, failed: 0 },
  };
  const server = await startHealthServer({
    host: r.health_host,
    port: r.health_port,
    key: 'reaper.health_port',
    check: () => reaperHealth(health, r.interval_ms),
  });
  log.info({ port: server.port, providers: [...destroyers.keys()] }, 'sandbox reaper started');

  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> = Promise.resolve();

  const pass = async (): Promise<boolean> => {
    await store.instances.heartbeat({
      instanceId,
      service: REAPER_SERVICE,
      host: hostname(),
      pid: process.pid,
      startedAt,
    });
    for (const d of destroyers.values()) {
      // A service killed without closing leaves processes no sandbox row leads to.
      await d.sweep?.().catch((err: unknown) => log.warn({ err }, 'sweeping orphans failed'));
    }
    const s = await reaper.runPass();
    if (r.unused_envs_after_sec > 0) {
      // Its own failure is logged: it must not hold up the sandboxes' pass.
      await collectUnusedEnvs({
        store,
        destroyers,
        olderThanMs: r.unused_envs_after_sec * 1000,
        batchSize: r.batch_size,
        logger: log,
      }).catch((err: unknown) => log.warn({ err }, 'removing unused environments failed'));
    }
    health.lastPassAt = new Date();
    health.lastPass = s;
    health.lastError = undefined;
    health.passes++;
    health.totals.taken += s.taken;
    health.totals.destroyed += s.destroyed;
    health.totals.failed += s.failed;
    return s.taken >= r.batch_size;
  };

  const schedule = (delayMs: number): void => {
    if (stopping) return;
    timer = setTimeout(() => {
      inFlight = pass().then(
        (full) => schedule(full ? 0 : r.interval_ms),
        (err: unknown) => {
          health.lastError = String(err);
          log.warn({ err }, 'reaper pass failed; retrying next interval');
          schedule(r.interval_ms);
        },
      );
    }, delayMs);
  };
  schedule(0);
  const retention = startRetention(
    store,
    config.retention,
    log,
    Math.max(config.nats.cmd_max_age_sec, config.nats.lease_bucket_max_age_sec),
  );

  return {
    instanceId,
    healthPort: server.port,
    health,
    retention,
    stop: async () => {
      stopping = true;
      clearTimeout(timer);
      await inFlight;
      await retention.stop();
      await server.close();
      await Promise.all([...destroyers.values()].map((d) => d.close()));
      await store.close();
      log.info('sandbox reaper stopped');
    },
  };
}
