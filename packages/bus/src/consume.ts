// Consumes a durable pull consumer with bounded concurrency per instance. Each message is
// handled in its own task; while a handler runs longer than a third of the ack wait, the
// message gets in-progress acks so the server does not redeliver it to another instance. The
// handler decides ack, nak (with a delay) or term; a thrown error naks with backoff.
import type { Consumer, ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import type { MsgHdrs } from '@nats-io/transport-node';
import type { Logger } from 'pino';

export type Disposition = { type: 'ack' } | { type: 'nak'; delayMs: number } | { type: 'term'; reason: string };

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
}

export interface Consumption {
  /** Stops pulling, waits for in-flight handlers (up to `graceMs`), then resolves. */
  stop(graceMs?: number): Promise<void>;
  /** Messages being handled right now. */
  inFlight(): number;
}

/** Exponential backoff with ±20 % jitter, so redeliveries of a burst do not arrive in lockstep. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number): number {
  const raw = Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(raw * (0.8 + Math.random() * 0.4));
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

export async function consume(consumer: Consumer, opts: ConsumeOptions): Promise<Consumption> {
  const log = opts.logger;
  let active = 0;
  let stopping = false;
  let wake: (() => void) | undefined;
  const idle = (): Promise<void> => new Promise((r) => (wake = r));

  async function run(m: JsMsg): Promise<void> {
    const heartbeat = setInterval(() => m.working(), Math.max(250, Math.floor(opts.ackWaitMs / 3)));
    let d: Disposition;
    try {
      d = await opts.handler(toDelivery(m));
    } catch (err) {
      const delayMs = backoffMs(m.info.deliveryCount, opts.retryBaseMs, opts.retryMaxMs);
      log.warn({ err, subject: m.subject, seq: m.seq, delivery: m.info.deliveryCount, delayMs }, 'handler failed; nak');
      d = { type: 'nak', delayMs };
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
        m.term(d.reason);
        break;
      default:
        d satisfies never;
    }
  }

  // Pull no more than we may run at once: buffered messages would age against the ack wait.
  const messages: ConsumerMessages = await consumer.consume({ max_messages: opts.concurrency });
  const loop = (async () => {
    for await (const m of messages) {
      // Buffered messages left after stop go back at once instead of waiting out the ack wait.
      if (stopping) {
        m.nak();
        continue;
      }
      while (active >= opts.concurrency) await idle();
      active++;
      void run(m)
        .catch((err: unknown) => log.error({ err, subject: m.subject }, 'ack failed'))
        .finally(() => {
          active--;
          const w = wake;
          wake = undefined;
          w?.();
        });
    }
  })();

  return {
    inFlight: () => active,
    stop: async (graceMs = 30_000) => {
      stopping = true;
      await messages.close();
      await loop.catch((err: unknown) => log.warn({ err }, 'consume loop ended with an error'));
      const deadline = Date.now() + graceMs;
      while (active > 0 && Date.now() < deadline) {
        await Promise.race([idle(), new Promise((r) => setTimeout(r, 100))]);
      }
      if (active > 0) log.warn({ active }, 'stopped with handlers still running; their messages will be redelivered');
    },
  };
}
