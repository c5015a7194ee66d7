// `pnpm reset-nats` against a private subject root: without --yes it only lists; with --yes the
// root's streams, consumers and lease bucket are gone and another root on the same server keeps
// everything; the services' provisioning re-creates them afterwards.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { AckPolicy, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createBus } from '@toolmesh/bus';
import { createNames } from '@toolmesh/protocol';
import { useNats, type TestNats } from '@toolmesh/testing';

const SCRIPT = join(import.meta.dirname, '..', 'scripts/reset-nats.ts');
const settings = {
  cmdMaxAgeSec: 3600,
  evtMaxAgeSec: 3600,
  dedupeWindowSec: 60,
  leaseBucketMaxAgeSec: 3600,
};

let target: TestNats;
let bystander: TestNats;
let nc: NatsConnection;
let jsm: JetStreamManager;

/** A service's start (the event stream, the lease bucket) and a project's stream, as the api makes it. */
async function provision(root: string): Promise<void> {
  const bus = await createBus({ nc, root, logger: pino({ level: 'silent' }) });
  await bus.provision(settings);
  await bus.provisionProject('p1', {
    maxBytes: 1_048_576,
    maxMessages: 1_000,
    maxMessageBytes: 1_024,
  });
  const names = createNames(root);
  await jsm.consumers.add(names.projectCommandStream('p1'), {
    durable_name: names.toolConsumer('skills'),
    ack_policy: AckPolicy.Explicit,
  });
}

async function present(root: string) {
  const names = createNames(root);
  const streams: string[] = [];
  for await (const s of jsm.streams.names()) streams.push(s);
  const buckets: string[] = [];
  for await (const b of new Kvm(nc).list()) buckets.push(b.bucket);
  return {
    cmd: streams.includes(names.projectCommandStream('p1')),
    evt: streams.includes(names.eventStream),
    leases: buckets.includes(names.leaseBucket),
  };
}

function reset(root: string, ...args: string[]) {
  return new Promise<{ code: number; out: string }>((resolve) => {
    execFile(
      process.execPath,
      [SCRIPT, ...args],
      {
        // As the deployment's admin user, which scripts such as this one run as.
        env: {
          PATH: process.env['PATH'],
          CG__NATS__URL: target.url,
          CG__NATS__SUBJECT_ROOT: root,
          CG__NATS__CREDS: target.creds('admin'),
        },
      },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number(err.code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}

beforeAll(async () => {
  target = await useNats();
  bystander = await useNats();
  nc = await target.connect('admin');
  jsm = await jetstreamManager(nc);
  await provision(target.root);
  await provision(bystander.root);
});
afterAll(async () => {
  await nc?.close();
  await target?.cleanup();
  await bystander?.cleanup();
});

it('lists what it would delete and deletes nothing without --yes', async () => {
  const r = await reset(target.root);
  expect(r.code).toBe(2);
  const names = createNames(target.root);
  expect(r.out).toContain(
    `stream ${names.projectCommandStream('p1')} with consumers: ${names.toolConsumer('skills')}`,
  );
  expect(r.out).toContain(`lease bucket ${names.leaseBucket}`);
  expect(r.out).toContain('run again with --yes');
  expect(await present(target.root)).toEqual({ cmd: true, evt: true, leases: true });
});

it("deletes the root's streams, consumers and lease bucket with --yes, and only those", async () => {
  const r = await reset(target.root, '--yes');
  expect(r.code, r.out).toBe(0);
  expect(await present(target.root)).toEqual({ cmd: false, evt: false, leases: false });
  expect(await present(bystander.root)).toEqual({ cmd: true, evt: true, leases: true });

  const again = await reset(target.root, '--yes');
  expect(again.code).toBe(0);
  expect(again.out).toContain('nothing to delete');

  // The next service start provisions everything again.
  await provision(target.root);
  expect(await present(target.root)).toEqual({ cmd: true, evt: true, leases: true });
});

it('exits 3 when NATS cannot be reached and 2 on a bad root', async () => {
  expect((await reset(target.root, '--nats-url', 'nats://127.0.0.1:1')).code).toBe(3);
  expect((await reset(target.root, '--root', 'a.b')).code).toBe(2);
  expect((await reset('a.b')).code).toBe(2);
});
