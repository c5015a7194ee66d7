// The api under test: a NATS root and a database of its own (migrated), the app built with an
// admin key, requests through Fastify's inject (no port), and helpers to make projects. Used by
// the route tests beside this file and by the cross-service tests in tests/.
import { expect } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import type { ArtifactStore } from '@toolmesh/artifacts';
import { pino } from 'pino';
import { createBus, sealMsgIdsWithCreds } from '@toolmesh/bus';
import { loadCreds } from '@toolmesh/nats-auth';
import { createClient } from '@toolmesh/client';
import { loadConfig, type Config } from '@toolmesh/config';
import { createPool, createStore, migrate, type Store } from '@toolmesh/store';
import type { ServiceUser } from '@toolmesh/nats-auth';
import {
  sandboxRootEnv,
  useNats,
  usePostgres,
  type TestNats,
  type TestNatsAuth,
} from '@toolmesh/testing';
import { createArtifactStoreFromConfig, streamSettingsOf } from '@toolmesh/service';
import { buildApp, type ApiApp } from '../app.ts';

export const ADMIN_KEY = 'test-admin-key-0123456789';

export interface TestResponse {
  status: number;
  /** Whatever the route returned, parsed from JSON. */
  body: any;
  headers: Record<string, unknown>;
  raw: string;
}

export interface RequestOptions {
  key?: string | undefined;
  body?: unknown;
  /** A raw payload (string or Buffer) with its own content type. */
  payload?: string | Buffer;
  headers?: Record<string, string>;
}

export interface TestApi {
  app: ApiApp;
  config: Config;
  /** The api's environment: its own NATS user and the account keys, as `pnpm stack` gives them. */
  env: Record<string, string>;
  /** The NATS root of this api, its users and its project credentials. */
  nats: TestNats;
  /** Another service's environment beside this api: the same settings, that service's user. */
  serviceEnv(user: ServiceUser, extra?: Record<string, string>): Record<string, string>;
  store: Store;
  artifacts: ArtifactStore;
  /** The artifact store's folder. */
  artifactsRoot: string;
  /** The api's own NATS connection (as the api user). */
  nc: NatsConnection;
  request(
    method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE',
    url: string,
    o?: RequestOptions,
  ): Promise<TestResponse>;
  /** A project with its first key. */
  createProject(id?: string): Promise<{ id: string; key: string }>;
  close(): Promise<void>;
}

let counter = 0;

export interface TestApiOptions {
  /** Create the streams and lease bucket, as the api does at start (default true). */
  provision?: boolean;
  /** A NATS server of the test's own (e.g. one it stops); the shared one by default. */
  natsServer?: TestNatsAuth;
}

export async function startTestApi(
  overrides: Record<string, string> = {},
  opts: TestApiOptions = {},
): Promise<TestApi> {
  const artifactsRoot = await mkdtemp(join(tmpdir(), 'toolmesh-artifacts-'));
  const nats = await useNats(opts.natsServer === undefined ? {} : { server: opts.natsServer });
  const db = await usePostgres();
  const env: Record<string, string> = {
    ...nats.env('api'),
    CG__POSTGRES__URL: db.url,
    CG__API__ADMIN_KEY: ADMIN_KEY,
    CG__ARTIFACTS__ROOT: artifactsRoot,
    CG__LOG__LEVEL: process.env['TEST_LOG_LEVEL'] ?? 'silent',
    ...sandboxRootEnv(),
    ...overrides,
  };
  const config = loadConfig({ env });
  const logger = pino({ level: config.log.level });
  const pool = createPool({
    url: db.url,
    max: 8,
    statementTimeoutMs: 10_000,
    connectTimeoutMs: 5_000,
    logger,
  });
  await migrate({ pool, logger });
  const store = createStore(pool);
  // Without async traces, as the api's own connection (connectNats): the benchmarks measure
  // this api, and an Error built per JetStream publish is not what production pays.
  const nc = await connect({ servers: nats.url, noAsyncTraces: true, ...natsAuthOf(config) });
  // Its Nats-Msg-Ids sealed as the api's own connection seals them (connectNats).
  if (config.nats.creds !== '') sealMsgIdsWithCreds(nc, loadCreds(config.nats.creds));
  if (opts.provision !== false) {
    const bus = await createBus({ nc, root: config.nats.subject_root, logger });
    await bus.provision(streamSettingsOf(config));
  }
  const client = createClient({ nc, root: config.nats.subject_root });
  // The store the configuration names: a folder by default, GCS when a test sets it so.
  const artifacts = createArtifactStoreFromConfig(config);
  const app = await buildApp({ config, store, nc, client, artifacts, logger });
  await app.ready();

  const request: TestApi['request'] = async (method, url, o = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.key) headers['authorization'] = `Bearer ${o.key}`;
    let payload: string | Buffer | undefined = o.payload;
    if (o.body !== undefined) {
      payload = JSON.stringify(o.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await app.inject({
      method,
      url,
      headers,
      ...(payload !== undefined ? { payload } : {}),
    });
    let body: unknown;
    try {
      body = res.body ? JSON.parse(res.body) : undefined;
    } catch {
      body = undefined;
    }
    return { status: res.statusCode, body, headers: res.headers, raw: res.body };
  };

  return {
    app,
    config,
    env,
    nats,
    serviceEnv: (user, extra = {}) => ({ ...env, ...nats.env(user), ...extra }),
    store,
    artifacts,
    artifactsRoot,
    nc,
    request,
    createProject: async (id) => {
      const res = await request('POST', '/v1/projects', {
        key: ADMIN_KEY,
        body: { id: id ?? `proj-${process.pid}-${++counter}`, name: 'test project' },
      });
      if (res.status !== 201)
        throw new Error(`creating a project failed: ${res.status} ${res.raw}`);
      return { id: res.body.project.id as string, key: res.body.key.key as string };
    },
    close: async () => {
      await app.close();
      await client.close();
      await nc.close();
      await store.close();
      await nats.cleanup();
      await db.cleanup();
      await rm(artifactsRoot, { recursive: true, force: true });
    },
  };
}

/** Connect options for the configuration's NATS user (none without `nats.creds`). */
export function natsAuthOf(config: Config): {
  authenticator?: ReturnType<typeof credsAuthenticator>;
} {
  if (config.nats.creds === '') return {};
  return {
    authenticator: credsAuthenticator(new TextEncoder().encode(loadCreds(config.nats.creds))),
  };
}

/** Every refusal has this shape: the status, a machine-readable code and a human message. */
export function expectError(res: TestResponse, status: number, code: string): void {
  expect(res.status, res.raw).toBe(status);
  expect(res.body?.error?.code, res.raw).toBe(code);
  expect(res.body?.error?.message).toEqual(expect.any(String));
}
