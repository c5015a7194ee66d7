// The nats-server configuration of an authenticated deployment: operator mode with the `full`
// account resolver (a folder of account JWTs that accepts signed updates at runtime through the
// system account, which is how revocations reach the server), both accounts preloaded.
import { appAccountJwt, operatorJwt, systemAccountJwt } from './jwts.ts';
import { publicKeyOf, type BusKeys } from './keys.ts';

export interface ServerConfigOptions {
  host: string;
  port: number;
  /** JetStream store folder. */
  storeDir: string;
  /** Account JWT folder of the resolver. */
  resolverDir: string;
  /** Optional HTTP monitoring port. */
  httpPort?: number;
  /** Largest message the server accepts (its default is 1 MiB). */
  maxPayloadBytes?: number;
  /** Joins a cluster: the cluster's name, this node's name, its route port, the others' routes. */
  cluster?: { name: string; serverName: string; port: number; routes: readonly string[] };
  /**
   * fsync every JetStream write before it is acknowledged (`sync_interval: always`), instead of
   * the server's default of every two minutes. nats-server 2.10 and later only: 2.9 refuses the
   * whole configuration file over the unknown field.
   */
  syncAlways?: boolean;
}

const q = (s: string) => JSON.stringify(s);

export async function natsServerConfig(keys: BusKeys, o: ServerConfigOptions): Promise<string> {
  const sys = publicKeyOf(keys.system_account_seed);
  const app = publicKeyOf(keys.account_seed);
  return [
    `host: ${q(o.host)}`,
    `port: ${o.port}`,
    ...(o.httpPort === undefined ? [] : [`http_port: ${o.httpPort}`]),
    ...(o.maxPayloadBytes === undefined ? [] : [`max_payload: ${o.maxPayloadBytes}`]),
    ...(o.cluster === undefined
      ? []
      : [
          `server_name: ${q(o.cluster.serverName)}`,
          `cluster {`,
          `  name: ${q(o.cluster.name)}`,
          `  listen: ${q(`${o.host}:${o.cluster.port}`)}`,
          `  routes: [${o.cluster.routes.map(q).join(', ')}]`,
          `}`,
        ]),
    `jetstream { store_dir: ${q(o.storeDir)}${o.syncAlways === true ? ', sync_interval: always' : ''} }`,
    `operator: ${q(await operatorJwt(keys))}`,
    `system_account: ${q(sys)}`,
    `resolver { type: full, dir: ${q(o.resolverDir)}, allow_delete: false, interval: "2m" }`,
    `resolver_preload {`,
    `  ${sys}: ${q(await systemAccountJwt(keys))}`,
    `  ${app}: ${q(await appAccountJwt(keys))}`,
    `}`,
    '',
  ].join('\n');
}
