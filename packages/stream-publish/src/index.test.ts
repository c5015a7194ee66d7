// Acknowledged publishes against a real nats-server: what the stream stored, deduplication,
// sealed ids, the refusals a publisher must tell apart, order, timeouts and a closed connection.
import { randomBytes } from 'node:crypto';
import { DiscardPolicy, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, headers, type NatsConnection } from '@nats-io/transport-node';
import { startLocalNats, startTestNatsServer, useNats, type TestNats } from '@toolmesh/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { msgIdKeyOf } from '@toolmesh/protocol';
import { StreamPublishError, streamPublisher, useMsgIdKey } from './index.ts';

let nats: TestNats;
let nc: NatsConnection;
let jsm: JetStreamManager;
const streams: string[] = [];

/**
 * An acknowledgement wait far past any test's timeout: a refusal that waited for it instead of
 * failing at once fails the test on its timeout (and would say `timeout`, not why it failed).
 */
const NEVER_MS = 600_000;

/** A stream of its own for a test, on subjects `<root>.<name>.>` (the admin user's reach). */
async function stream(extra: Record<string, unknown> = {}): Promise<string> {
  const name = `${nats.root}_SP_${randomBytes(3).toString('hex')}`;
  await jsm.streams.add({ name, subjects: [`${at(name)}.>`], duplicate_window: 60e9, ...extra });
  streams.push(name);
  return name;
}

/** Where a test's stream takes its messages. */
const at = (name: string) => `${nats.root}.${name}`;

async function failureOf(p: Promise<unknown>): Promise<StreamPublishError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StreamPublishError);
  return err as StreamPublishError;
}

beforeAll(async () => {
  nats = await useNats();
  nc = await nats.connect('admin');
  jsm = await jetstreamManager(nc);
});

afterAll(async () => {
  for (const s of streams) await jsm.streams.delete(s).catch(() => undefined);
  await nc?.close();
  await nats?.cleanup();
});

describe('stream publisher', () => {
  it('resolves once the stream stored the message, with its headers', async () => {
    const name = await stream();
    const h = headers();
    h.set('CG-Test', 'yes');
    const ack = await streamPublisher(nc).publish(`${at(name)}.a`, 'hello', {
      headers: h,
      msgId: 'm-1',
    });
    expect(ack).toEqual({ stream: name, seq: 1, duplicate: false });
    const stored = await jsm.streams.getMessage(name, { seq: 1 });
    expect(stored?.string()).toBe('hello');
    expect(stored?.header.get('CG-Test')).toBe('yes');
    // Sealed with the connection's key: the readable id, then a MAC of it.
    expect(stored?.header.get('Nats-Msg-Id')).toMatch(/^m-1\/[A-Za-z0-9_-]{22}$/);
    expect(streamPublisher(nc).inFlight()).toBe(0);
  });

  it('a second publish of the same Nats-Msg-Id is acknowledged as a duplicate, not stored', async () => {
    const name = await stream();
    const p = streamPublisher(nc);
    const first = await p.publish(`${at(name)}.a`, 'one', { msgId: 'same' });
    const again = await p.publish(`${at(name)}.a`, 'two', { msgId: 'same' });
    expect(again).toEqual({ stream: name, seq: first.seq, duplicate: true });
    expect((await jsm.streams.info(name)).state.messages).toBe(1);
  });

  it('seals ids per key: another connection cannot make this one a duplicate, one of the same key can', async () => {
    const name = await stream();
    const other = await nats.connect('admin');
    const sameKey = await nats.connect('admin');
    const otherSameKey = await nats.connect('admin');
    try {
      // Whoever publishes the readable id itself, or the same id under a key of its own, first
      // stores a message of its own; this connection's publish is still stored.
      const planted = headers();
      planted.set('Nats-Msg-Id', 'victim-1');
      await streamPublisher(other).publish(`${at(name)}.a`, 'forged', { headers: planted });
      await streamPublisher(other).publish(`${at(name)}.a`, 'forged', { msgId: 'victim-1' });
      const mine = await streamPublisher(nc).publish(`${at(name)}.a`, 'mine', {
        msgId: 'victim-1',
      });
      expect(mine.duplicate).toBe(false);

      // Two connections given one key (two instances of a service) seal alike: a retry by
      // either dedupes.
      const key = msgIdKeyOf('a credential seed');
      useMsgIdKey(sameKey, key);
      useMsgIdKey(otherSameKey, key);
      expect(() => useMsgIdKey(sameKey, key)).toThrow(/already/);
      const first = await streamPublisher(sameKey).publish(`${at(name)}.a`, 'x', { msgId: 'r-1' });
      const retry = await streamPublisher(otherSameKey).publish(`${at(name)}.a`, 'x', {
        msgId: 'r-1',
      });
      expect(first.duplicate).toBe(false);
      expect(retry).toEqual({ stream: name, seq: first.seq, duplicate: true });
    } finally {
      for (const c of [other, sameKey, otherSameKey]) await c.close();
    }
  });

  it('many in flight at once are stored in the order they were published', async () => {
    const name = await stream();
    const acks = await Promise.all(
      Array.from({ length: 500 }, (_, i) =>
        streamPublisher(nc).publish(`${at(name)}.a`, String(i)),
      ),
    );
    expect(acks.map((a) => a.seq)).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
    expect((await jsm.streams.getMessage(name, { seq: 321 }))?.string()).toBe('320');
  });

  it('refuses at once when no stream captures the subject and nobody listens', async () => {
    const err = await failureOf(
      streamPublisher(nc).publish(`${nats.root}.nowhere.x`, 'lost', { timeoutMs: NEVER_MS }),
    );
    expect(err.failure).toBe('no_stream');
    expect(err.outcomeUnknown).toBe(false);
    expect(err.message).toContain(`${nats.root}.nowhere.x`);
  }, 60_000);

  it("passes on the stream's own refusal: a full stream that discards new messages", async () => {
    const name = await stream({ max_msgs: 1, discard: DiscardPolicy.New });
    await streamPublisher(nc).publish(`${at(name)}.a`, 'fits');
    const err = await failureOf(streamPublisher(nc).publish(`${at(name)}.a`, 'does not fit'));
    expect(err.failure).toBe('refused');
    expect(err.outcomeUnknown).toBe(false);
    expect(err.message).toMatch(/maximum messages exceeded/i);
    expect(err.errCode).toBeGreaterThan(0);
    expect((await jsm.streams.info(name)).state.messages).toBe(1);
  });

  it('times out when only a core subscriber hears the subject (nothing acknowledges)', async () => {
    const subject = `${nats.root}.core-only.x`;
    const heard: string[] = [];
    const sub = nc.subscribe(subject, {
      callback: (_e, m) => {
        heard.push(m.string());
      },
    });
    await nc.flush();
    const err = await failureOf(streamPublisher(nc).publish(subject, 'hi', { timeoutMs: 300 }));
    expect(err.failure).toBe('timeout');
    expect(err.outcomeUnknown).toBe(true);
    expect(heard).toEqual(['hi']);
    expect(streamPublisher(nc).inFlight()).toBe(0);
    sub.unsubscribe();
  });

  it('fails what waits when the connection closes, and refuses publishing after', async () => {
    const own = await nats.connect('admin');
    const subject = `${nats.root}.core-only.y`;
    own.subscribe(subject, { callback: () => undefined });
    await own.flush();
    const waiting = streamPublisher(own).publish(subject, 'never acked', { timeoutMs: 30_000 });
    await own.close();
    // The first was sent and may have been stored; the second never left.
    expect(await failureOf(waiting)).toMatchObject({ failure: 'closed', outcomeUnknown: true });
    expect(await failureOf(streamPublisher(own).publish(subject, 'x'))).toMatchObject({
      failure: 'closed',
      outcomeUnknown: false,
    });
  });

  it('fails at once a publish the server does not permit, and one whose acks it may not read', async () => {
    // Users of a server of the test's own: one may not publish to `closed.>`, the other may not
    // subscribe to inboxes (so it never sees an acknowledgement).
    const server = await startLocalNats({
      config: ({ port, storeDir }) =>
        Promise.resolve(`listen: 127.0.0.1:${port}
jetstream { store_dir: "${storeDir}" }
authorization { users = [
  { user: writer, password: w, permissions: { publish: { deny: ["closed.>"] } } }
  { user: deaf, password: d, permissions: { subscribe: { deny: ["_INBOX.>"] } } }
] }
`),
    });
    const writer = await connect({ servers: server.url, user: 'writer', pass: 'w' });
    const deaf = await connect({ servers: server.url, user: 'deaf', pass: 'd' });
    try {
      await (
        await jetstreamManager(writer)
      ).streams.add({ name: 'S', subjects: ['open.>', 'closed.>'] });
      expect(await streamPublisher(writer).publish('open.a', 'fine')).toMatchObject({ seq: 1 });
      const denied = await failureOf(
        streamPublisher(writer).publish('closed.a', 'no', { timeoutMs: NEVER_MS }),
      );
      expect(denied.failure).toBe('forbidden');
      expect(denied.outcomeUnknown).toBe(false);
      expect(denied.message).toMatch(/closed\.a.*Permissions Violation/i);
      // The same connection goes on publishing where it may.
      expect(await streamPublisher(writer).publish('open.b', 'still fine')).toMatchObject({
        seq: 2,
      });
      const unheard = await failureOf(
        streamPublisher(deaf).publish('open.c', 'x', { timeoutMs: NEVER_MS }),
      );
      expect(unheard.failure).toBe('forbidden');
      expect(unheard.message).toMatch(/Permissions Violation/i);
      // Published all the same: only its acknowledgement could not come back.
      expect(unheard.outcomeUnknown).toBe(true);
      expect((await (await jetstreamManager(writer)).streams.info('S')).state.messages).toBe(3);
      // Told at once from then on, not after each publish's timeout: refused before sending.
      const again = await failureOf(
        streamPublisher(deaf).publish('open.d', 'y', { timeoutMs: NEVER_MS }),
      );
      expect(again.failure).toBe('forbidden');
      expect(again.outcomeUnknown).toBe(false);
    } finally {
      await writer.close();
      await deaf.close();
      await server.close();
    }
  }, 90_000);

  it('goes on across a server restart: what timed out meanwhile is stored once when sent again', async () => {
    const server = await startTestNatsServer();
    const ownNats = await useNats({ server });
    const own = await ownNats.connect('admin', {
      reconnectTimeWait: 100,
      maxReconnectAttempts: -1,
    });
    const r = ownNats.root;
    try {
      await (await jetstreamManager(own)).streams.add({ name: 'R', subjects: [`${r}.>`] });
      const p = streamPublisher(own);
      expect(await p.publish(`${r}.a`, 'before', { msgId: 'a' })).toMatchObject({ seq: 1 });
      await server.stop();
      // Sent while the server is away: no acknowledgement comes (as with nats.js's js.publish),
      // and the caller is told so rather than left waiting.
      const during = failureOf(p.publish(`${r}.b`, 'during', { msgId: 'b', timeoutMs: 1_500 }));
      await server.start();
      expect((await during).failure).toBe('timeout');
      // Sent again under the same Nats-Msg-Id once the server is back (its JetStream may take a
      // moment to load the stream): stored once, whether or not the first copy made it.
      let again;
      for (const until = Date.now() + 15_000; !again;) {
        again = await p.publish(`${r}.b`, 'during', { msgId: 'b', timeoutMs: 1_000 }).catch((e) => {
          if (Date.now() > until) throw e;
          return undefined;
        });
      }
      expect(again.stream).toBe('R');
      const after = await p.publish(`${r}.c`, 'after', { msgId: 'c' });
      expect(after.seq).toBe(again.seq + 1);
      const info = await (await jetstreamManager(own)).streams.info('R');
      expect(info.state.messages).toBe(3);
      expect(p.inFlight()).toBe(0);
    } finally {
      await own.close();
      await server.close();
    }
  });

  it('one publisher per connection', () => {
    expect(streamPublisher(nc)).toBe(streamPublisher(nc));
  });
});
