// What the route groups are built from: one object, passed down from main.ts (or a test).
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { ArtifactStore } from '@toolmesh/artifacts';
import type { Client } from '@toolmesh/client';
import type { Config } from '@toolmesh/config';
import type { Store } from '@toolmesh/store';
import type { Auth } from './auth.ts';
import type { ProjectStreams } from './project-streams.ts';
import type { RegistryEvents } from './registry-events.ts';
import type { Slots } from './slots.ts';

export interface ApiDeps<S = Store> {
  config: Config;
  /**
   * The api serves every domain, so main.ts passes the whole store; each part names the domains it
   * reads and writes (`RouteDeps<CallsStore & RegistryStore>`), and gets only those.
   */
  store: S;
  nc: NatsConnection;
  client: Client;
  artifacts: ArtifactStore;
  logger: Logger;
}

export interface RouteDeps<S = Store> extends ApiDeps<S> {
  auth: Auth;
  registryEvents: RegistryEvents;
  /** Open event streams, per project and in all ([api] sse_max_streams*). */
  streams: Slots;
  /** Each project's command stream, with its limits (project-streams.ts). */
  projectStreams: ProjectStreams;
}
