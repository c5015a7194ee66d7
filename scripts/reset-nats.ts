// `pnpm reset-nats --yes`: deletes what a deployment keeps in NATS under its subject root: the
// command and event streams (with every durable consumer on them) and the lease bucket. The
// services re-create them empty at their next start. Calls not yet acknowledged and events
// not yet read are lost; cards, tasks and executions in Postgres are not touched.
//
// Stop every service first: a running one keeps pulling from a consumer that no longer exists.
//
//   pnpm reset-nats [--root <subject root>] [--nats-url <url>] [--yes]
// The root and URL default to the configuration ([nats] subject_root and url, CG__NATS__*).
// Without --yes it only lists what it would delete and exits 2.
// Exit codes: 0 deleted (or nothing there), 2 usage or not confirmed, 3 NATS unreachable.
import { parseArgs } from 'node:util';
import {
  jetstreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { loadCreds } from '@toolmesh/nats-auth';
import { loadConfig, type Config } from '@toolmesh/config';
import { createNames } from '@toolmesh/protocol';

const say = (line: string) => process.stdout.write(`[reset-nats] ${line}\n`);

async function consumersOf(jsm: JetStreamManager, stream: string): Promise<string[] | undefined> {
  try {
    await jsm.streams.info(stream);
  } catch (err) {
    if (err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound) {
      return undefined;
    }
    throw err;
  }
  const names: string[] = [];
  for await (const c of jsm.consumers.list(stream)) names.push(c.name);
  return names;
}

async function bucketExists(nc: NatsConnection, bucket: string): Promise<boolean> {
  for await (const status of new Kvm(nc).list()) if (status.bucket === bucket) return true;
  return false;
}

async function main(): Promise<number> {
  let values: { root?: string; 'nats-url'?: string; yes?: boolean };
  try {
    ({ values } = parseArgs({
      options: {
        root: { type: 'string' },
        'nats-url': { type: 'string' },
        yes: { type: 'boolean', default: false },
      },
    }));
  } catch (err) {
    say((err as Error).message);
    return 2;
  }
  let config: Config;
  try {
    config = loadConfig({ env: process.env });
  } catch (err) {
    say(`invalid configuration: ${(err as Error).message}`);
    return 2;
  }
  const root = values.root ?? config.nats.subject_root;
  const url = values['nats-url'] ?? config.nats.url;
  let names;
  try {
    names = createNames(root);
  } catch (err) {
    say((err as Error).message);
    return 2;
  }

  let nc: NatsConnection;
  try {
    nc = await connect({
      servers: url.split(','),
      timeout: config.nats.connect_timeout_ms,
      // On an authenticated server this needs a user with the JetStream API of the root (the
      // `admin` creds of `pnpm stack` / the nats-auth job): CG__NATS__CREDS=<path>.
      ...(config.nats.creds === ''
        ? {}
        : {
            authenticator: credsAuthenticator(
              new TextEncoder().encode(loadCreds(config.nats.creds)),
            ),
          }),
    });
  } catch (err) {
    say(`cannot connect to NATS at ${url}: ${(err as Error).message}`);
    return 3;
  }
  try {
    const jsm = await jetstreamManager(nc);
    // The event stream, every project's command stream, and the one command stream of releases
    // before streams were per project (`<root>_CMD`).
    const streams = [names.eventStream, names.legacyCommandStream];
    for await (const s of jsm.streams.names()) {
      if (names.projectOfCommandStream(s) !== undefined) streams.push(s);
    }
    const found = new Map<string, string[]>();
    for (const s of streams) {
      const consumers = await consumersOf(jsm, s);
      if (consumers) found.set(s, consumers);
    }
    const bucket = (await bucketExists(nc, names.leaseBucket)) ? names.leaseBucket : undefined;

    if (found.size === 0 && !bucket) {
      say(`nothing to delete under root ${root} on ${url}`);
      return 0;
    }
    for (const [s, consumers] of found) {
      say(`stream ${s} with consumers: ${consumers.length ? consumers.join(', ') : '(none)'}`);
    }
    if (bucket) say(`lease bucket ${bucket}`);
    if (!values.yes) {
      say('not deleted: run again with --yes (stop the services first)');
      return 2;
    }
    for (const s of found.keys()) {
      await jsm.streams.delete(s);
      say(`deleted stream ${s}`);
    }
    if (bucket) {
      await (await new Kvm(nc).open(bucket)).destroy();
      say(`deleted lease bucket ${bucket}`);
    }
    return 0;
  } finally {
    await nc.close();
  }
}

process.exitCode = await main();
