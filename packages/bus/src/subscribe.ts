// Core NATS subscriptions whose callback cannot take the connection down. nats.js runs a
// subscription's callback inside its protocol parser: when the server refuses a subscription (a
// permissions violation) it calls the callback with the error and `{}` for the message, and
// whatever a callback throws, there or on a real message, leaves the parser and closes the
// connection. For the api that connection carries every tenant's calls, so one bad callback is
// an outage; every callback in the services goes through here.
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';

export interface GuardedSubscribeOptions {
  /** The caller's child logger, with the ids that say whose subscription this is. */
  log: Logger;
  /** A queue group: one subscriber of the group gets each message. */
  queue?: string;
  onMessage(msg: Msg): void;
  /**
   * The server refused the subscription: nats.js has closed it already and nothing more will
   * arrive. Called after the refusal is logged.
   */
  onRefused?(err: Error): void;
}

/**
 * `nc.subscribe` with a callback that never throws: a refusal is logged (error level: the code
 * asked for a subject its NATS user is not granted) and handed to `onRefused`; a handler that
 * throws loses that one message, logged, and the subscription goes on.
 */
export function subscribeGuarded(
  nc: NatsConnection,
  subject: string,
  o: GuardedSubscribeOptions,
): Subscription {
  return nc.subscribe(subject, {
    ...(o.queue === undefined ? {} : { queue: o.queue }),
    callback: (err, msg) => {
      if (err) {
        o.log.error({ err, subject }, 'subscription refused by the server; it is closed');
        guard(o.log, subject, () => o.onRefused?.(err));
        return;
      }
      guard(o.log, subject, () => o.onMessage(msg));
    },
  });
}

function guard(log: Logger, subject: string, fn: () => void): void {
  try {
    fn();
  } catch (err) {
    log.error({ err, subject }, 'a subscription handler threw; the message is dropped');
  }
}
