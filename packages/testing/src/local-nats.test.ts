import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { createNames, createSubjects } from '@toolmesh/protocol';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from './ports.ts';
import { hasSyncInterval, startLocalNats } from './local-nats.ts';
import type { LocalNats } from './local-nats.ts';

describe('startLocalNats, a bare server without authentication (the starter under every test server)', () => {
  const servers: LocalNats[] = [];
  afterAll(async () => {
    for (const s of servers) await s.close();
  });

  it('serves JetStream, keeps streams across stop and start, and close removes its store', async () => {
    const nats = await startLocalNats();
    servers.push(nats);
    expect(nats.url).toBe(`nats://127.0.0.1:${nats.port}`);

    const names = createNames('local');
    const subjects = createSubjects('local');
    const subject = subjects.toolCall({
      project: 'p1',
      channel: 'c1',
      target: 'builtin',
      tool: 'echo',
    });
    const nc = await connect({ servers: nats.url });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({
      name: names.projectCommandStream('p1'),
      subjects: subjects.projectCommandStreamSubjects('p1'),
    });
    const ack = await jetstream(nc).publish(subject, 'hello');
    expect(ack.stream).toBe(names.projectCommandStream('p1'));
    await nc.close();

    await nats.stop();
    await expect(
      connect({ servers: nats.url, reconnect: false, timeout: 1_000 }),
    ).rejects.toThrow();

    await nats.start();
    const again = await connect({ servers: nats.url });
    const info = await (
      await jetstreamManager(again)
    ).streams.info(names.projectCommandStream('p1'));
    expect(info.state.messages).toBe(1);
    await again.close();

    await nats.close();
    expect(existsSync(nats.dir)).toBe(false);
  });

  it('reports the server output when it cannot start', async () => {
    // Hold a port so the server's bind fails: with an explicit port there is no retry.
    const port = await freePort();
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(port, '127.0.0.1', resolve));
    try {
      await expect(startLocalNats({ port, startTimeoutMs: 5_000 })).rejects.toThrow(
        /nats-server output[\s\S]*address already in use/,
      );
    } finally {
      blocker.close();
    }
  });

  it('fsyncs every JetStream write where the server can, and still starts where it cannot', async () => {
    // `pnpm stack` asks for it; Debian 12's nats-server 2.9.10 has no sync_interval and would
    // refuse a configuration file that names it.
    const nats = await startLocalNats({ syncAlways: true });
    servers.push(nats);
    expect(nats.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(nats.syncAlways).toBe(hasSyncInterval(nats.version));
    const nc = await connect({ servers: nats.url });
    await (await jetstreamManager(nc)).streams.add({ name: 'SYNCED', subjects: ['synced.>'] });
    expect((await jetstream(nc).publish('synced.one', 'x')).seq).toBe(1);
    await nc.close();
  });

  it('knows which servers take sync_interval: 2.10.0 and later', () => {
    expect(hasSyncInterval('2.9.10')).toBe(false);
    expect(hasSyncInterval('2.9.25')).toBe(false);
    expect(hasSyncInterval('2.10.0')).toBe(true);
    expect(hasSyncInterval('2.14.4')).toBe(true);
    expect(hasSyncInterval('3.0.0')).toBe(true);
  });
});

describe('freePort', () => {
  it('returns a port this process can listen on', async () => {
    const port = await freePort();
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    server.close();
    expect(port).toBeGreaterThan(0);
  });
});
