// The api process: configuration, connections, the HTTP server; stops cleanly on SIGTERM.
import { closeNats, createBus } from '@toolmesh/bus';
import { createClient } from '@toolmesh/client';
import {
  connectNatsFromConfig,
  createArtifactStoreFromConfig,
  createStoreFromConfig,
  instanceIdOf,
  runService,
  streamSettingsOf,
} from '@toolmesh/service';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildApp } from './app.ts';
import { bootstrapTools } from './bootstrap.ts';
import { startScheduler } from './schedules/scheduler.ts';

await runService({
  name: 'api',
  env: process.env,
  start: async (config, logger) => {
    const instanceId = instanceIdOf(config);
    const nc = await connectNatsFromConfig(config, `api:${instanceId}`, logger);
    // The api publishes calls and wakeups: the streams must exist before any tool service ran.
    await (
      await createBus({ nc, root: config.nats.subject_root, logger })
    ).provision(streamSettingsOf(config));
    const store = createStoreFromConfig(config, `api:${instanceId}`, logger);
    // Projects seeded by an older release get this release's skills.* and builtin.* schemas.
    // In the background and retried: the api starts (and /readyz says so) while Postgres is down.
    const sync = new AbortController();
    void (async () => {
      for (let attempt = 0; !sync.signal.aborted; attempt++) {
        try {
          const synced = await store.tools.syncReserved(bootstrapTools());
          if (synced > 0)
            logger.info({ tools: synced }, 'reserved tools brought up to this release');
          return;
        } catch (err) {
          logger.warn({ err, attempt }, 'could not sync the reserved tools yet; retrying');
          await sleep(Math.min(30_000, 500 * 2 ** attempt), undefined, {
            signal: sync.signal,
          }).catch(() => undefined);
        }
      }
    })();
    const client = createClient({ nc, root: config.nats.subject_root });
    const artifacts = createArtifactStoreFromConfig(config);
    const app = await buildApp({ config, store, nc, client, artifacts, logger });
    const { host, port } = config.api;
    const address = await app.listen({ host, port }).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      throw new Error(
        `port ${port} on ${host} is already in use: choose another with CG__API__PORT or [api] port`,
        { cause: err },
      );
    });
    logger.info({ address }, 'api listening');
    const scheduler = startScheduler({
      store,
      client,
      nc,
      root: config.nats.subject_root,
      config: config.schedules,
      instanceId,
      logger,
    });
    return {
      stop: async () => {
        sync.abort();
        await scheduler.stop();
        await app.close();
        await client.close();
        await closeNats(nc, { timeoutMs: config.nats.drain_timeout_ms, logger });
        await store.close();
      },
    };
  },
});
