// The connections every process opens the same way from its configuration.
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { createArtifactStore, type ArtifactStore } from '@toolmesh/artifacts';
import { connectNats, type StreamSettings } from '@toolmesh/bus';
import { loadCreds } from '@toolmesh/nats-auth';
import type { Config } from '@toolmesh/config';
import {
  createE2bSandboxProvider,
  createLocalSandboxProvider,
  type SandboxProvider,
} from '@toolmesh/sandbox';
import { createPool, createStore, type Store } from '@toolmesh/store';
import { observeSandboxes } from './observed-sandbox.ts';

/** The configured instance id, or `<hostname>-<pid>`. */
export function instanceIdOf(config: Config): string {
  return config.service.instance_id || `${hostname()}-${process.pid}`;
}

/** Attempts at a first connection that timed out before a service gives up (see below). */
const FIRST_CONNECT_ATTEMPTS = 3;

/**
 * A service's NATS connection. A first connection that timed out is tried again, up to three
 * attempts: on a host starting everything at once (a compose start, `pnpm stack` on two busy
 * cores) one handshake can miss its window while the server is fine. A refused port or a refused
 * credential fails at once; retrying would only hide it.
 */
export async function connectNatsFromConfig(
  config: Config,
  name: string,
  logger: Logger,
): Promise<NatsConnection> {
  const creds = config.nats.creds === '' ? undefined : loadCreds(config.nats.creds);
  for (let attempt = 1; ; attempt++) {
    try {
      return await connectNats({
        url: config.nats.url,
        name,
        connectTimeoutMs: config.nats.connect_timeout_ms,
        reconnectWaitMs: config.nats.reconnect_wait_ms,
        maxReconnectAttempts: config.nats.max_reconnect_attempts,
        logger,
        ...(creds === undefined ? {} : { creds }),
      });
    } catch (err) {
      const cause = (err as Error).cause;
      const timedOut = cause instanceof Error && cause.name === 'TimeoutError';
      if (!timedOut || attempt >= FIRST_CONNECT_ATTEMPTS) throw err;
      logger.warn(
        {
          component: 'nats',
          attempt,
          of: FIRST_CONNECT_ATTEMPTS,
          timeout_ms: config.nats.connect_timeout_ms,
        },
        'NATS did not answer the first connection in time; trying again',
      );
    }
  }
}

export function createStoreFromConfig(
  config: Config,
  applicationName: string,
  logger: Logger,
): Store {
  return createStore(
    createPool({
      url: config.postgres.url,
      max: config.postgres.pool_max,
      statementTimeoutMs: config.postgres.statement_timeout_ms,
      connectTimeoutMs: config.postgres.connect_timeout_ms,
      applicationName,
      logger,
    }),
  );
}

/** The stream and lease-bucket settings of the configuration, for provisioning at start. */
export function streamSettingsOf(config: Config): StreamSettings {
  return {
    cmdMaxAgeSec: config.nats.cmd_max_age_sec,
    evtMaxAgeSec: config.nats.evt_max_age_sec,
    dedupeWindowSec: config.nats.dedupe_window_sec,
    leaseBucketMaxAgeSec: config.nats.lease_bucket_max_age_sec,
    replicas: config.nats.replicas,
  };
}

/** The artifact store the configuration names (a folder, or a GCS bucket). */
export function createArtifactStoreFromConfig(config: Config): ArtifactStore {
  const a = config.artifacts;
  return createArtifactStore(
    a.kind === 'gcs'
      ? {
          kind: 'gcs',
          bucket: a.gcs_bucket,
          prefix: a.gcs_prefix,
          ...(a.gcs_api_endpoint === '' ? {} : { api_endpoint: a.gcs_api_endpoint }),
        }
      : { kind: 'fs', root: resolve(a.root) },
  );
}

/** The e2b settings of the configuration's [e2b] section, as the provider and the probe take them. */
export function e2bOptionsFromConfig(config: Config) {
  const e = config.e2b;
  return {
    apiKey: e.api_key,
    ...(e.api_url === '' ? {} : { apiUrl: e.api_url }),
    domain: e.domain,
    ...(e.sandbox_url === '' ? {} : { sandboxUrl: e.sandbox_url }),
    template: e.template,
    workdir: e.workdir,
    requestTimeoutMs: e.request_timeout_ms,
    sandboxTimeoutSec: e.sandbox_timeout_sec,
  };
}

/** The e2b provider of the configuration's [e2b] section (the reaper needs it whatever the default). */
export function createE2bProviderFromConfig(config: Config, logger: Logger): SandboxProvider {
  const s = config.sandbox;
  return observeSandboxes(
    createE2bSandboxProvider({
      ...e2bOptionsFromConfig(config),
      allowedDomains: s.allowed_domains,
      limits: { processes: s.process_limit, fileSizeBytes: s.file_size_bytes },
      logger,
    }),
  );
}

/** The sandbox provider the configuration names: local (bubblewrap here) or e2b. */
export async function createSandboxProviderFromConfig(
  config: Config,
  logger: Logger,
): Promise<SandboxProvider> {
  const s = config.sandbox;
  const limits = { processes: s.process_limit, fileSizeBytes: s.file_size_bytes };
  switch (s.provider) {
    case 'local':
      return observeSandboxes(
        await createLocalSandboxProvider({
          rootDir: resolve(s.root_dir),
          allowedDomains: s.allowed_domains,
          allowRead: s.read_paths,
          limits,
          warmIdleMs: s.warm_idle_ms,
          memoryBytes: s.memory_bytes,
          cpuPercent: s.cpu_percent,
          diskBytes: s.disk_bytes,
          sandboxUser: { uid: s.uid, gid: s.gid },
          logger,
        }),
      );
    case 'e2b':
      return createE2bProviderFromConfig(config, logger);
    default: {
      const never: never = s.provider;
      throw new Error(`unknown sandbox provider ${String(never)}`);
    }
  }
}
