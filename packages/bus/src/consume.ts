// Consumes a durable pull consumer with bounded concurrency per instance. Each message is
// handled in its own task; while a handler runs longer than a third of the ack wait, the
// message gets in-progress acks so the server does not redeliver it to another instance. The
// handler decides ack, nak (with a delay) or term; a thrown error naks with backoff, unless no
// delivery could ever succeed (terminal, below): that message is terminated at once.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Consumer, ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import {
  ClosedConnectionError,
  DrainingConnectionError,
  type MsgHdrs,
} from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { MeshError } from '@toolmesh/protocol';
import {
  SpanKind,
  contextFromHeaders,
  metrics,
  tracingEnabled,
  withSpan,
} from '@toolmesh/telemetry';

export type Disposition =
  { type: 'ack' } | { type: 'nak'; delayMs: number } | { type: 'term'; reason: string };

export interface Delivery {
  readonly subject: string;
  readonly data: Uint8Array;
  readonly streamSeq: number;
  /** 1 on first delivery. */
  readonly deliveryCount: number;
  header(name: string): string | undefined;
}

export type DeliveryHandler = (d: Delivery) => Promise<Disposition>;

export interface ConsumeOptions {
  concurrency: number;
  ackWaitMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  handler: DeliveryHandler;
  logger: Logger;
  /** The durable consumer's name, for the redelivery metric. */
  consumer?: string;
}

export interface Consumption {
  /** Stops pulling, waits for in-flight handlers (up to `graceMs`), then resolves. */
  stop(graceMs?: number): Promise<void>;
  /** Messages being handled right now. */
  inFlight(): number;
  /** Messages of the durable not yet acked by any instance (pending plus in flight). */
  backlog(): Promise<number>;
}

/** How long one pull request waits for messages before the next is sent. */
const FETCH_EXPIRES_MS = 10_000;
/** Pause after a failed pull request (consumer missing, connection down) before the next. */
const FETCH_RETRY_MS = 1_000;

/** Exponential backoff with ±20 % jitter, so redeliveries of a burst do not arrive in lockstep. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number): number {
  const raw = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(raw * (0.8 + Math.random() * 0.4));
}

/** A span name of bounded cardinality: the subject's kind and component (`cmd.tool`). */
export function operationOf(subject: string): string {
  const t = subject.split('.');
  return t.length > 5 ? `${t[4]}.${t[5]}` : 'message';
}

/**
 * Whether a handler's error would recur on every delivery of the same message: a RangeError (a
 * stack overflow on a deeply nested body, an impossible length), a SyntaxError (unparsable
 * text), or a mesh error whose code is terminal. Redelivering such a message only repeats the
 * failure for max_deliver rounds of backoff. Anything else may be infrastructure: retried.
 */
export function isTerminalError(err: unknown): boolean {
  if (err instanceof RangeError || err instanceof SyntaxError) return true;
  return err instanceof MeshError && !err.retryable;
}

function toDelivery(m: JsMsg): Delivery {
  const hdrs: MsgHdrs | undefined = m.headers;
  return {
    subject: m.subject,
    data: m.data,
    streamSeq: m.seq,
    deliveryCount: m.info.deliveryCount,
    header: (name) => hdrs?.get(name) || undefined,
  };
}

export function consume(consumer: Consumer, opts: ConsumeOptions): Consumption {
  const log = opts.logger;
  let active = 0;
  /** Messages asked for by pull requests still open and not yet received. */
  let requested = 0;
  let stopping = false;
  let failedUntil = 0;
  const batches = new Set<ConsumerMessages>();
  let idle: Array<() => void> = [];
  const changed = (): Promise<void> => new Promise((r) => idle.push(r));
  const notify = (): void => {
    const w = idle;
    idle = [];
    for (const r of w) r();
  };
  // Pull requests are topped up while earlier ones are still open, so a freed slot is refilled
  // without waiting for an open request to fill or expire; small deficits wait for a batch to
  // be worth a request, unless nothing at all is open.
  const topUpAt = Math.max(1, Math.floor(opts.concurrency / 4));

  async function run(m: JsMsg): Promise<void> {
    const heartbeat = setInterval(() => m.working(), Math.max(250, Math.floor(opts.ackWaitMs / 3)));
    let d: Disposition;
    if (m.info.deliveryCount > 1) metrics.redeliveries.inc({ consumer: opts.consumer ?? '' });
    try {
      const delivery = toDelivery(m);
      // The handler runs in a consumer span, a child of the publisher's span when the message
      // carries a traceparent: one trace across the bus.
      d = !tracingEnabled()
        ? await opts.handler(delivery)
        : await withSpan(
            `${operationOf(m.subject)} process`,
            {
              kind: SpanKind.CONSUMER,
              parent: contextFromHeaders((name) => delivery.header(name)),
              attributes: {
                'messaging.system': 'nats',
                'messaging.destination.name': m.subject,
                'messaging.nats.delivery_count': m.info.deliveryCount,
              },
            },
            () => opts.handler(delivery),
          );
    } catch (err) {
      if (isTerminalError(err)) {
        log.error(
          { err, subject: m.subject, seq: m.seq, delivery: m.info.deliveryCount },
          'handler failed in a way no redelivery can cure; terminated',
        );
        d = { type: 'term', reason: (err as Error).message };
      } else {
        const delayMs = backoffMs(m.info.deliveryCount, opts.retryBaseMs, opts.retryMaxMs);
        log.warn(
          { err, subject: m.subject, seq: m.seq, delivery: m.info.deliveryCount, delayMs },
          'handler failed; nak',
        );
        d = { type: 'nak', delayMs };
      }
    } finally {
      clearInterval(heartbeat);
    }
    switch (d.type) {
      case 'ack':
        m.ack();
        break;
      case 'nak':
        m.nak(d.delayMs);
        break;
      case 'term':
        // nats-server 2.9 ignores a +TERM that carries a reason and redelivers the message, so
        // the reason goes to the log instead.
        log.info({ subject: m.subject, seq: m.seq, reason: d.reason }, 'message terminated');
        m.term();
        break;
      default:
        d satisfies never;
    }
  }

  async function pull(count: number): Promise<void> {
    requested += count;
    let received = 0;
    let batch: ConsumerMessages | undefined;
    try {
      batch = await consumer.fetch({ max_messages: count, expires: FETCH_EXPIRES_MS });
      batches.add(batch);
      if (stopping) batch.stop();
      for await (const m of batch) {
        received++;
        requested--;
        if (stopping) {
          m.nak();
          continue;
        }
        active++;
        void run(m)
          .catch((err: unknown) => log.error({ err, subject: m.subject }, 'ack failed'))
          .finally(() => {
            active--;
            notify();
          });
      }
    } catch (err) {
      if (!(
        stopping ||
        err instanceof ClosedConnectionError ||
        err instanceof DrainingConnectionError
      )) {
        log.warn({ err }, 'pull request failed; retrying');
        failedUntil = Date.now() + FETCH_RETRY_MS;
      }
    } finally {
      if (batch) batches.delete(batch);
      requested -= count - received;
      notify();
    }
  }

  const loop = (async () => {
    while (!stopping) {
      const wait = failedUntil - Date.now();
      if (wait > 0) {
        await Promise.race([changed(), sleep(wait)]);
        continue;
      }
      const deficit = opts.concurrency - active - requested;
      if (deficit > 0 && (deficit >= topUpAt || requested === 0)) {
        void pull(deficit);
        continue;
      }
      await changed();
    }
  })();

  return {
    inFlight: () => active,
    backlog: async () => {
      const info = await consumer.info();
      return info.num_pending + info.num_ack_pending;
    },
    stop: async (graceMs = 30_000) => {
      stopping = true;
      notify();
      for (const b of batches) b.stop();
      await loop.catch((err: unknown) => log.warn({ err }, 'consume loop ended with an error'));
      const deadline = Date.now() + graceMs;
      while (active > 0 && Date.now() < deadline) {
        await Promise.race([changed(), sleep(100)]);
      }
      if (active > 0)
        log.warn(
          { active },
          'stopped with handlers still running; their messages will be redelivered',
        );
    },
  };
}
