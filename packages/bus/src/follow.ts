// Following new messages of a stream live, through an ephemeral push consumer that delivers to
// a private inbox: how a process watches subjects its NATS user may not subscribe to (the api
// reads a project's tool calls this way; it may not subscribe to `cmd` subjects). The consumer
// lives in memory on one server, acks nothing and is deleted when the follow stops; if the
// process dies, the server drops it once its inbox has had no interest for a while.
import {
  AckPolicy,
  DeliverPolicy,
  jetstreamManager,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { createInbox, nanos, type Msg, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { RetryableError } from '@toolmesh/protocol';
import { SERVICE_INBOX } from '@toolmesh/nats-auth';
import { subscribeGuarded } from './subscribe.ts';

export interface FollowOptions {
  stream: string;
  /** One subject filter inside the stream's subjects. */
  filter: string;
  /** The consumer's name, built in packages/protocol. */
  name: string;
  /** The child logger of whoever follows (with its ids). */
  log: Logger;
  onMessage(msg: Msg): void;
  /**
   * The follow ended on its own: the server refused its inbox subscription, said the consumer
   * is gone, or stopped sending heartbeats (e.g. it restarted and lost the in-memory consumer).
   * Everything is released already; follow again to go on.
   */
  onEnd(err: Error): void;
  /** The connection's inbox prefix; the service users' `_INBOX` by default. */
  inboxPrefix?: string;
  /** How often the server says it is alive while nothing is delivered (5 s by default). */
  heartbeatMs?: number;
}

export interface Follow {
  /** Deletes the consumer and the subscription; idempotent. */
  stop(): Promise<void>;
}

/** Heartbeats missed in a row before a follow counts as lost. */
const MISSED_HEARTBEATS = 3;
/** How long the server keeps a consumer whose inbox lost interest (a follower that died). */
const ORPHAN_TTL_MS = 30_000;
/** JetStream status: an idle heartbeat (the rest of the 1xx/4xx statuses end a follow). */
const HEARTBEAT = 100;

/** One manager per connection; building one makes no request (checkAPI off). */
const managers = new WeakMap<NatsConnection, Promise<JetStreamManager>>();

/** Creates the consumer and returns once it delivers; throws a RetryableError if it cannot. */
export async function followStream(nc: NatsConnection, o: FollowOptions): Promise<Follow> {
  const heartbeatMs = o.heartbeatMs ?? 5_000;
  let made = managers.get(nc);
  if (!made) managers.set(nc, (made = jetstreamManager(nc, { checkAPI: false })));
  const jsm = await made;
  const inbox = createInbox(o.inboxPrefix ?? SERVICE_INBOX);
  let stopped = false;
  let started = false;
  let failedEarly: Error | undefined;
  let lastSeen = Date.now();

  const end = (err: Error) => {
    if (stopped) return;
    void stop();
    // Before the caller holds the follow, the failure is the start's to report.
    if (started) o.onEnd(err);
    else failedEarly = err;
  };
  // Subscribed before the consumer exists (the SUB goes out first on this connection), so the
  // server has interest from the consumer's first delivery on.
  const sub = subscribeGuarded(nc, inbox, {
    log: o.log,
    onRefused: end,
    onMessage: (msg) => {
      lastSeen = Date.now();
      const status = msg.headers?.code ?? 0;
      if (status === HEARTBEAT) return;
      if (status !== 0) {
        const why = `${status} ${msg.headers?.description ?? ''}`.trim();
        o.log.warn({ consumer: o.name, status: why }, 'live consumer ended by the server');
        end(new RetryableError(`consumer ${o.name} ended: ${why}`));
        return;
      }
      o.onMessage(msg);
    },
  });
  const watchdog = setInterval(() => {
    if (Date.now() - lastSeen <= MISSED_HEARTBEATS * heartbeatMs) return;
    o.log.warn({ consumer: o.name }, 'live consumer sends no heartbeats; ending the follow');
    end(new RetryableError(`consumer ${o.name} sent no heartbeat in ${MISSED_HEARTBEATS} periods`));
  }, heartbeatMs);
  watchdog.unref();

  const release = () => {
    stopped = true;
    clearInterval(watchdog);
    sub.unsubscribe();
  };
  const deleteConsumer = () =>
    jsm.consumers.delete(o.stream, o.name).then(
      () => undefined,
      // Gone already (the server dropped it, or never made it): nothing to release.
      (err: unknown) => o.log.debug({ err, consumer: o.name }, 'live consumer not deleted'),
    );
  async function stop(): Promise<void> {
    if (stopped) return;
    release();
    await deleteConsumer();
  }

  try {
    await jsm.consumers.add(o.stream, {
      name: o.name,
      deliver_subject: inbox,
      filter_subject: o.filter,
      deliver_policy: DeliverPolicy.New,
      ack_policy: AckPolicy.None,
      mem_storage: true,
      num_replicas: 1,
      idle_heartbeat: nanos(heartbeatMs),
      inactive_threshold: nanos(ORPHAN_TTL_MS),
    });
  } catch (cause) {
    release();
    throw new RetryableError(`following ${o.filter} failed: ${(cause as Error).message}`, {
      cause,
    });
  }
  if (failedEarly) {
    // Ended while the consumer was being made: stop() ran before it existed.
    await deleteConsumer();
    throw failedEarly;
  }
  started = true;
  lastSeen = Date.now();
  return { stop };
}
