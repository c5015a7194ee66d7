// NATS authentication of a deployment, made once and kept: the operator, system and application
// account keys (keys.json, a secret: the api signs project credentials with it), one .creds file
// per service user (creds/<user>.creds), and the nats-server configuration that trusts them
// (nats.conf, public JWTs only). Existing keys are kept; creds and nats.conf are written again
// from them, so a changed subject root or port only needs another run. `pnpm stack` calls it
// for .data/nats-auth; compose runs it as the one-shot `nats-auth` job into a volume.
//   node scripts/nats-auth.ts --dir <folder> [--root cg] [--host 0.0.0.0] [--port 4222]
//     [--http-port 8222] [--store-dir /data/jetstream] [--resolver-dir /data/jwt]
//     [--no-sync-always]   (for a nats-server older than 2.10, which refuses `sync_interval`)
// JetStream fsyncs every write before acknowledging it (`sync_interval: always`) unless told not to.
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  ServiceUser,
  generateBusKeys,
  mintUser,
  natsServerConfig,
  parseBusKeys,
  servicePermissions,
  type BusKeys,
  type ServerConfigOptions,
} from '@toolmesh/nats-auth';
import { loadConfig } from '@toolmesh/config';

export interface NatsAuthFiles {
  keysFile: string;
  confFile: string;
  /** The .creds file of each service user. */
  creds: Record<ServiceUser, string>;
  keys: BusKeys;
}

export async function ensureNatsAuth(
  dir: string,
  root: string,
  server: ServerConfigOptions,
): Promise<NatsAuthFiles> {
  await mkdir(join(dir, 'creds'), { recursive: true, mode: 0o700 });
  const keysFile = join(dir, 'keys.json');
  const keys = await readFile(keysFile, 'utf8').then(parseBusKeys, async (err: unknown) => {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    const k = generateBusKeys();
    await writeFile(keysFile, `${JSON.stringify(k, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    return k;
  });
  const creds = {} as Record<ServiceUser, string>;
  for (const user of Object.values(ServiceUser)) {
    const seed = keys.service_user_seeds[user];
    if (seed === undefined) throw new Error(`${keysFile} has no seed for the ${user} user`);
    const minted = await mintUser(keys, user, servicePermissions(root, user), { seed });
    const file = join(dir, 'creds', `${user}.creds`);
    await writeFile(file, minted.creds, { mode: 0o600 });
    await chmod(file, 0o600);
    creds[user] = file;
  }
  const confFile = join(dir, 'nats.conf');
  // Public JWTs only: readable by the nats-server's user, whoever that is.
  await writeFile(confFile, await natsServerConfig(keys, server), { mode: 0o644 });
  return { keysFile, confFile, creds, keys };
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      dir: { type: 'string' },
      root: { type: 'string' },
      host: { type: 'string', default: '0.0.0.0' },
      port: { type: 'string', default: '4222' },
      'http-port': { type: 'string', default: '8222' },
      'store-dir': { type: 'string', default: '/data/jetstream' },
      'resolver-dir': { type: 'string', default: '/data/jwt' },
      'max-payload': { type: 'string', default: '1048576' },
      'sync-always': { type: 'boolean', default: true },
    },
    allowNegative: true,
  });
  if (values.dir === undefined) {
    process.stderr.write('nats-auth: --dir <folder> is required\n');
    process.exit(2);
  }
  const root = values.root ?? loadConfig({ env: process.env }).nats.subject_root;
  const files = await ensureNatsAuth(resolve(values.dir), root, {
    host: values.host,
    port: Number(values.port),
    httpPort: Number(values['http-port']),
    storeDir: values['store-dir'],
    resolverDir: values['resolver-dir'],
    maxPayloadBytes: Number(values['max-payload']),
    syncAlways: values['sync-always'],
  });
  process.stdout.write(
    `nats-auth: keys in ${files.keysFile}, server configuration in ${files.confFile}, creds of ${Object.keys(files.creds).join(', ')} in ${join(resolve(values.dir), 'creds')} (subject root ${root})\n`,
  );
}
