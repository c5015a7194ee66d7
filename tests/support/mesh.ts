// A whole mesh for an integration test: a NATS root and a database of its own, migrated, a
// configuration pointing at them, skills-service instances (in-process or as real child
// processes that can be SIGKILLed) each as the deployment's `skills` NATS user, the tenants' SDK
// client (each project on a bus credential of its own) and a store to check what was written.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Client } from '@toolmesh/client';
import { loadConfig, type Config } from '@toolmesh/config';
import { createPool, createStore, migrate, type Store } from '@toolmesh/store';
import {
  sandboxRootEnv,
  useNats,
  usePostgres,
  type TestNats,
  type TestNatsAuth,
} from '@toolmesh/testing';
import { startSkillsService, type SkillsService } from '../../services/skills/src/app.ts';
import { createTenantClient } from './tenants.ts';

export const REPO_ROOT = join(import.meta.dirname, '..', '..');

export interface Mesh {
  config: Config;
  /** The skills service's environment (its NATS user); other services take `nats.env(user)`. */
  env: Record<string, string>;
  nats: TestNats;
  /** The test's own connection, as the admin user: for checks no tenant may make. */
  nc: NatsConnection;
  /** The SDK as tenants use it: each project's calls on a bus credential of that project. */
  client: Client;
  store: Store;
  logger: Logger;
  startService(extraEnv?: Record<string, string>): Promise<SkillsService>;
  spawnService(extraEnv?: Record<string, string>): Promise<ChildProcess>;
  close(): Promise<void>;
}

export interface MeshOptions {
  /** A NATS server of the test's own (e.g. one it will restart); the shared one by default. */
  natsServer?: TestNatsAuth;
  /** A database of the test's own (e.g. a server it will stop); a fresh one by default. */
  databaseUrl?: string;
}

export async function startMesh(
  overrides: Record<string, string> = {},
  opts: MeshOptions = {},
): Promise<Mesh> {
  const nats = await useNats(opts.natsServer === undefined ? {} : { server: opts.natsServer });
  const db = opts.databaseUrl
    ? { url: opts.databaseUrl, cleanup: async () => {} }
    : await usePostgres();
  const env: Record<string, string> = {
    ...nats.env('skills'),
    CG__POSTGRES__URL: db.url,
    CG__LOG__LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
    ...sandboxRootEnv(),
    ...overrides,
  };
  const config = loadConfig({ env });
  const logger = pino({ level: config.log.level });
  const pool = createPool({
    url: db.url,
    max: 4,
    statementTimeoutMs: 10_000,
    connectTimeoutMs: 5_000,
    logger,
  });
  await migrate({ pool, logger });
  const store = createStore(pool);
  const reconnect = { maxReconnectAttempts: -1, reconnectTimeWait: 200 };
  const nc = await nats.connect('admin', reconnect);
  const client = createTenantClient(nats, reconnect);
  const services: SkillsService[] = [];
  const children: ChildProcess[] = [];

  return {
    config,
    env,
    nats,
    nc,
    client,
    store,
    logger,
    startService: async (extraEnv = {}) => {
      const s = await startSkillsService(loadConfig({ env: { ...env, ...extraEnv } }), logger);
      services.push(s);
      return s;
    },
    spawnService: async (extraEnv = {}) => {
      const child = spawn(process.execPath, [join(REPO_ROOT, 'services/skills/src/main.ts')], {
        cwd: REPO_ROOT,
        env: { PATH: process.env['PATH'] ?? '', ...env, CG__LOG__LEVEL: 'info', ...extraEnv },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.push(child);
      let out = '';
      const keep = (b: Buffer) => {
        out = (out + b.toString()).slice(-16_384);
      };
      child.stderr?.on('data', keep);
      // Ready once the runtime logged its start line; later output is drained, not kept.
      await new Promise<void>((resolve, reject) => {
        const onData = (b: Buffer) => {
          keep(b);
          if (out.includes('tool service started')) {
            child.stdout?.off('data', onData);
            resolve();
          }
        };
        child.stdout?.on('data', onData);
        child.once('exit', (code) =>
          reject(new Error(`skills service exited (${code}) before starting:\n${out}`)),
        );
      });
      child.stdout?.resume();
      return child;
    },
    close: async () => {
      for (const c of children) {
        if (c.exitCode === null && c.signalCode === null) {
          c.kill('SIGKILL');
          await once(c, 'exit');
        }
      }
      for (const s of services) await s.stop(5_000);
      await client.close();
      await store.close();
      await nats.cleanup();
      await db.cleanup();
    },
  };
}
