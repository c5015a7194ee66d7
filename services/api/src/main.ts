// The api process: load the configuration, connect, listen; stop cleanly on SIGTERM/SIGINT.
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { pino } from 'pino';
import { createArtifactStore } from '@toolmesh/artifacts';
import { connectNats, createBus } from '@toolmesh/bus';
import { createClient } from '@toolmesh/client';
import { ConfigError, loadConfig, redactConfig, type Config } from '@toolmesh/config';
import { createPool, createStore } from '@toolmesh/store';
import { buildApp, streamSettings } from './app.ts';

let config: Config;
try {
  config = loadConfig({ env: process.env });
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`api: ${err.message}\n`);
  process.exit(2);
}
const logger = pino(
  { level: config.log.level, base: { service: 'api' } },
  pino.destination({ sync: false, minLength: 4096 }),
);
setInterval(() => logger.flush(), 1_000).unref();
logger.info({ config: redactConfig(config) }, 'starting');

try {
  const instanceId = config.service.instance_id || `${hostname()}-${process.pid}`;
  const nc = await connectNats({
    url: config.nats.url,
    name: `api:${instanceId}`,
    connectTimeoutMs: config.nats.connect_timeout_ms,
    reconnectWaitMs: config.nats.reconnect_wait_ms,
    maxReconnectAttempts: config.nats.max_reconnect_attempts,
    logger,
  });
  // The api publishes calls and wakeups: the streams must exist even before any tool service ran.
  await (
    await createBus({ nc, root: config.nats.subject_root, logger })
  ).provision(streamSettings(config));
  const store = createStore(
    createPool({
      url: config.postgres.url,
      max: config.postgres.pool_max,
      statementTimeoutMs: config.postgres.statement_timeout_ms,
      connectTimeoutMs: config.postgres.connect_timeout_ms,
      applicationName: `api:${instanceId}`,
      logger,
    }),
  );
  const client = createClient({ nc, root: config.nats.subject_root });
  const artifacts = createArtifactStore({ kind: 'fs', root: resolve(config.artifacts.root) });
  const app = await buildApp({ config, store, nc, client, artifacts, logger });
  const address = await app.listen({ host: config.api.host, port: config.api.port });
  logger.info({ address }, 'api listening');
  logger.flush();

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: finishing requests in flight');
    (async () => {
      await app.close();
      await client.close();
      await nc.drain();
      await store.close();
    })().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
} catch (err) {
  logger.fatal({ err }, 'failed to start');
  logger.flush();
  process.exit(1);
}
