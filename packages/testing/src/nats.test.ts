import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { createNames, createSubjects } from '@toolmesh/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalNats } from './local-nats.ts';
import type { LocalNats } from './local-nats.ts';
import { useNats } from './nats.ts';
import type { TestNats } from './nats.ts';

async function streamNames(jsm: JetStreamManager): Promise<string[]> {
  const names: string[] = [];
  for await (const name of jsm.streams.names()) names.push(name);
  return names;
}

describe('useNats', () => {
  let nats: TestNats;
  let nc: NatsConnection;
  beforeAll(async () => {
    nats = await useNats();
    nc = await connect({ servers: nats.url });
  });
  afterAll(async () => {
    await nc.close();
    await nats.cleanup();
  });

  it('gives a working JetStream under a root of its own', async () => {
    expect(nats.root).toMatch(/^t[0-9a-f]{10}$/);
    const names = createNames(nats.root);
    const subjects = createSubjects(nats.root);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({
      name: names.commandStream,
      subjects: subjects.commandStreamSubjects(),
    });

    const subject = subjects.toolCall({
      project: 'p1',
      channel: 'c1',
      target: 'builtin',
      tool: 'echo',
    });
    const js = jetstream(nc);
    await js.publish(subject, JSON.stringify({ hello: 'world' }));
    await jsm.consumers.add(names.commandStream, {
      durable_name: 'reader',
      ack_policy: AckPolicy.Explicit,
    });
    const msg = await (
      await js.consumers.get(names.commandStream, 'reader')
    ).next({ expires: 5_000 });
    expect(msg?.subject).toBe(subject);
    expect(msg?.json()).toEqual({ hello: 'world' });
    msg?.ack();
  });

  it('gives every call a different root', async () => {
    const other = await useNats();
    expect(other.root).not.toBe(nats.root);
    expect(other.url).toBe(nats.url);
    await other.cleanup();
  });

  it('cleanup deletes the root streams and KV bucket, and leaves other roots alone', async () => {
    const mine = await useNats();
    const neighbour = await useNats();
    const jsm = await jetstreamManager(nc);
    for (const root of [mine.root, neighbour.root]) {
      const names = createNames(root);
      const subjects = createSubjects(root);
      await jsm.streams.add({
        name: names.commandStream,
        subjects: subjects.commandStreamSubjects(),
      });
      await jsm.streams.add({ name: names.eventStream, subjects: subjects.eventStreamSubjects() });
      await new Kvm(nc).create(names.leaseBucket);
    }
    const neighbourNames = createNames(neighbour.root);
    const mineNames = createNames(mine.root);

    await mine.cleanup();
    await mine.cleanup(); // twice is harmless, as in an afterAll after a failed test

    const left = await streamNames(jsm);
    expect(left).not.toContain(mineNames.commandStream);
    expect(left).not.toContain(mineNames.eventStream);
    expect(left).not.toContain(`KV_${mineNames.leaseBucket}`);
    expect(left).toEqual(
      expect.arrayContaining([
        neighbourNames.commandStream,
        neighbourNames.eventStream,
        `KV_${neighbourNames.leaseBucket}`,
      ]),
    );
    await neighbour.cleanup();
    expect(await streamNames(jsm)).not.toContain(neighbourNames.commandStream);
  });
});

describe('useNats with NATS_URL', () => {
  let server: LocalNats;
  const saved = process.env['NATS_URL'];
  beforeAll(async () => {
    server = await startLocalNats();
  });
  afterAll(async () => {
    if (saved === undefined) delete process.env['NATS_URL'];
    else process.env['NATS_URL'] = saved;
    await server.close();
  });

  it('uses the server NATS_URL names', async () => {
    process.env['NATS_URL'] = server.url;
    const nats = await useNats();
    expect(nats.url).toBe(server.url);
    await nats.cleanup();
  });

  it('fails with the URL in the message when nothing listens there', async () => {
    await server.stop();
    process.env['NATS_URL'] = server.url;
    await expect(useNats()).rejects.toThrow(`cannot connect to NATS at ${server.url}`);
  });
});
