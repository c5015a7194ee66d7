// The api process: configuration, connections, the HTTP server; stops cleanly on SIGTERM.
import { resolve } from 'node:path';
import { createArtifactStore } from '@toolmesh/artifacts';
import { createBus } from '@toolmesh/bus';
import { createClient } from '@toolmesh/client';
import {
  connectNatsFromConfig,
  createStoreFromConfig,
  instanceIdOf,
  runService,
  streamSettingsOf,
} from '@toolmesh/service';
import { buildApp } from './app.ts';

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
    const client = createClient({ nc, root: config.nats.subject_root });
    const a = config.artifacts;
    const artifacts = createArtifactStore(
      a.kind === 'gcs'
        ? {
            kind: 'gcs',
            bucket: a.gcs_bucket,
            prefix: a.gcs_prefix,
            ...(a.gcs_api_endpoint === '' ? {} : { api_endpoint: a.gcs_api_endpoint }),
          }
        : { kind: 'fs', root: resolve(a.root) },
    );
    const app = await buildApp({ config, store, nc, client, artifacts, logger });
    const address = await app.listen({ host: config.api.host, port: config.api.port });
    logger.info({ address }, 'api listening');
    return {
      stop: async () => {
        await app.close();
        await client.close();
        await nc.drain();
        await store.close();
      },
    };
  },
});
