import { streamPublisher } from '@toolmesh/stream-publish';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { createNames, createSubjects } from '@toolmesh/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useNats } from './nats.ts';
import type { TestNats } from './nats.ts';
import { allowViolations, describeViolations, takeViolations } from './violations.ts';

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
    nc = await nats.connect('admin');
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
    const stream = names.projectCommandStream('p1');
    await jsm.streams.add({ name: stream, subjects: subjects.projectCommandStreamSubjects('p1') });

    const subject = subjects.toolCall({
      project: 'p1',
      channel: 'c1',
      target: 'builtin',
      tool: 'echo',
    });
    const js = jetstream(nc);
    await js.publish(subject, JSON.stringify({ hello: 'world' }));
    await jsm.consumers.add(stream, {
      durable_name: 'reader',
      ack_policy: AckPolicy.Explicit,
    });
    const msg = await (await js.consumers.get(stream, 'reader')).next({ expires: 5_000 });
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
        name: names.projectCommandStream('p1'),
        subjects: subjects.projectCommandStreamSubjects('p1'),
      });
      await jsm.streams.add({ name: names.eventStream, subjects: subjects.eventStreamSubjects() });
      await new Kvm(nc).create(names.leaseBucket);
    }
    const neighbourNames = createNames(neighbour.root);
    const mineNames = createNames(mine.root);

    await mine.cleanup();
    await mine.cleanup(); // twice is harmless, as in an afterAll after a failed test

    const left = await streamNames(jsm);
    expect(left).not.toContain(mineNames.projectCommandStream('p1'));
    expect(left).not.toContain(mineNames.eventStream);
    expect(left).not.toContain(`KV_${mineNames.leaseBucket}`);
    expect(left).toEqual(
      expect.arrayContaining([
        neighbourNames.projectCommandStream('p1'),
        neighbourNames.eventStream,
        `KV_${neighbourNames.leaseBucket}`,
      ]),
    );
    await neighbour.cleanup();
    expect(await streamNames(jsm)).not.toContain(neighbourNames.projectCommandStream('p1'));
  });

  it("makes a project's command stream as the api does, for a credential or a publish", async () => {
    const names = createNames(nats.root);
    const jsm = await jetstreamManager(nc);
    await nats.connectProject('made1');
    const info = await jsm.streams.info(names.projectCommandStream('made1'));
    // config.toml's [quotas] bus_* and [nats] cmd_max_age_sec, as a deployment has them.
    expect(info.config).toMatchObject({
      max_bytes: 536_870_912,
      max_msgs: 1_000_000,
      max_msg_size: 1_048_576,
      discard: 'new',
      max_age: 86_400 * 1e9,
    });
    const subject = createSubjects(nats.root).cancel({ project: 'made2', channel: 'c' });
    const ack = await streamPublisher(nc).publish(subject, '{}');
    expect(ack.stream).toBe(names.projectCommandStream('made2'));
  });
});

describe('useNats users', () => {
  let nats: TestNats;
  beforeAll(async () => {
    nats = await useNats();
  });
  afterAll(async () => {
    await nats.cleanup();
  });

  it('gives each service the environment pnpm stack gives it: its own user, keys for the api only', () => {
    const api = nats.env('api');
    expect(api).toMatchObject({ CG__NATS__URL: nats.url, CG__NATS__SUBJECT_ROOT: nats.root });
    expect(api['CG__NATS__CREDS']).toContain('-----BEGIN NATS USER JWT-----');
    expect(JSON.parse(api['CG__NATS__AUTH_KEYS'] as string)).toEqual(nats.keys);
    expect(nats.env('skills')['CG__NATS__AUTH_KEYS']).toBe('');
    expect(nats.env('skills')['CG__NATS__CREDS']).not.toBe(api['CG__NATS__CREDS']);
  });

  it('holds a service user to its subjects, and reports a refusal with the user and subject', async () => {
    const nc = await nats.connect('skills');
    const forbidden = createSubjects(nats.root).toolCall({
      project: 'p1',
      channel: 'c1',
      target: 'builtin',
      tool: 'echo',
    });
    const refused = new Promise<Error>((resolve) =>
      nc.subscribe(forbidden, {
        callback: (err) => {
          if (err) resolve(err);
        },
      }),
    );
    expect((await refused).message).toMatch(/Permissions Violation for Subscription/);
    await new Promise((r) => setTimeout(r, 50));
    // What the test setup reports when a test did not expect the refusal (taken here, so the
    // setup does not fail this test for it):
    const seen = takeViolations();
    expect(describeViolations(seen)).toContain(
      `Subscription violation by the skills user on subject "${forbidden}"`,
    );
  });

  it('a project credential may publish its own calls only', async () => {
    const subjects = createSubjects(nats.root);
    const own = await nats.connectProject('p1');
    const js = jetstream(own);
    const names = createNames(nats.root);
    const call = (project: string) =>
      subjects.toolCall({ project, channel: 'c1', target: 'builtin', tool: 'echo' });
    expect((await js.publish(call('p1'), '{}')).stream).toBe(names.projectCommandStream('p1'));
    await nats.provisionProject('p2');
    allowViolations((v) => v.subject === call('p2') && v.user.includes('project credential'));
    await expect(js.publish(call('p2'), '{}', { timeout: 2_000 })).rejects.toThrow(
      /Permissions Violation/,
    );
  });
});
