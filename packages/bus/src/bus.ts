// The bus facade a process builds once: one connection, the JetStream client and manager, the
// names of this deployment, publishing with Nats-Msg-Id, durable consumption and core
// subscriptions. Errors talking to NATS become RetryableError at this boundary.
import {
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import {
  headers as natsHeaders,
  type NatsConnection,
  type Subscription,
} from '@nats-io/transport-node';
import type { Logger } from 'pino';
import {
  Header,
  RetryableError,
  createNames,
  createSubjects,
  type Names,
  type Subjects,
} from '@toolmesh/protocol';
import { streamPublisher, streamQuotaError } from '@toolmesh/stream-publish';
import { SpanKind, traceHeaders, tracingEnabled, withSpan } from '@toolmesh/telemetry';
import { closeNats } from './connection.ts';
import { consume, operationOf, type ConsumeOptions, type Consumption } from './consume.ts';
import { createLeaseStore, type LeaseStore } from './lease.ts';
import { subscribeGuarded } from './subscribe.ts';
import { consumeProjects, type ProjectConsumerSpec, type ProjectsConsumeOptions } from './fair.ts';
import {
  provisionConsumer,
  provisionLeaseBucket,
  provisionProjectStream,
  provisionStreams,
  type ConsumerSpec,
  type ProjectStreamLimits,
  type StreamSettings,
} from './provision.ts';

export interface PublishOptions {
  /**
   * The readable Nats-Msg-Id (`MsgId`); sent sealed with the connection's key, so JetStream drops
   * a repeat of this publisher's inside the dedupe window and nobody else can cause one.
   */
  msgId?: string;
  headers?: Record<string, string | undefined>;
}

export interface PublishAck {
  seq: number;
  duplicate: boolean;
}

export interface Bus {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly subjects: Subjects;
  readonly names: Names;
  /** The event stream and the lease bucket; idempotent, every process may call it at start. */
  provision(settings: StreamSettings): Promise<void>;
  /** Creates or updates one project's command stream with its limits (after provision). */
  provisionProject(project: string, limits: ProjectStreamLimits): Promise<void>;
  leases(): LeaseStore;
  /** JetStream publish: resolves once the stream stored (or deduplicated) the message. */
  publish(subject: string, data: Uint8Array, opts?: PublishOptions): Promise<PublishAck>;
  /** Core NATS publish: fire and forget (lossy streams, notifications). */
  publishCore(subject: string, data: Uint8Array, hdrs?: Record<string, string | undefined>): void;
  consume(spec: ConsumerSpec, opts: Omit<ConsumeOptions, 'logger'>): Promise<Consumption>;
  /** One durable on every project's command stream, the slots shared between projects (fair.ts). */
  consumeProjects(spec: ProjectConsumerSpec, opts: ProjectsConsumeOptions): Promise<Consumption>;
  /** Core subscription; a refusal is logged and a handler that throws loses only that message. */
  subscribe(subject: string, onMessage: (subject: string, data: Uint8Array) => void): Subscription;
  /** Drains subscriptions and closes the connection, closing it outright past drainTimeoutMs. */
  close(): Promise<void>;
}

export interface BusOptions {
  nc: NatsConnection;
  /** The subject root of this deployment (`cg` on the wire). */
  root: string;
  logger: Logger;
  /** How long close() may drain before it closes outright ([nats] drain_timeout_ms). */
  drainTimeoutMs?: number | undefined;
}

function toHeaders(h: Record<string, string | undefined> | undefined) {
  // The current span's traceparent, unless the caller set one: the consumer continues the trace.
  const trace = h?.[Header.traceparent] === undefined ? traceHeaders() : {};
  if (!h && trace[Header.traceparent] === undefined) return undefined;
  const out = natsHeaders();
  for (const [k, v] of Object.entries({ ...trace, ...h })) if (v !== undefined) out.set(k, v);
  return out;
}

export async function createBus(opts: BusOptions): Promise<Bus> {
  const { nc, logger } = opts;
  const log = logger.child({ component: 'bus' });
  const js = jetstream(nc);
  const jsm: JetStreamManager = await jetstreamManager(nc);
  const subjects = createSubjects(opts.root);
  const names = createNames(opts.root);
  let leaseStore: LeaseStore | undefined;
  let settingsNow: StreamSettings | undefined;

  return {
    nc,
    js,
    subjects,
    names,
    provision: async (settings) => {
      // On a cluster the JetStream API answers only once a meta leader is elected, and a stream
      // at replicas 3 may take longer to create than one request's timeout: a process starting
      // with the cluster retries for a while instead of exiting.
      const deadline = Date.now() + (settings.provisionTimeoutMs ?? 60_000);
      for (let attempt = 1; ; attempt++) {
        try {
          await provisionStreams(jsm, subjects, names, settings);
          settingsNow = settings;
          leaseStore = createLeaseStore(
            await provisionLeaseBucket(
              nc,
              jsm,
              names,
              settings.leaseBucketMaxAgeSec,
              settings.replicas,
            ),
          );
          break;
        } catch (cause) {
          if (!isTransient(cause) || Date.now() >= deadline) {
            throw new RetryableError(`provisioning JetStream failed: ${(cause as Error).message}`, {
              cause,
            });
          }
          log.warn({ err: cause, attempt }, 'JetStream not ready yet; provisioning again');
          await new Promise((r) => setTimeout(r, Math.min(250 * attempt, 2_000)));
        }
      }
      log.info(
        { streams: [names.eventStream], bucket: names.leaseBucket },
        'JetStream provisioned',
      );
    },
    provisionProject: async (project, limits) => {
      if (!settingsNow) throw new Error('bus.provision() must run before project streams are made');
      await provisionProjectStream(jsm, subjects, names, project, settingsNow, limits);
    },
    leases: () => {
      if (!leaseStore) throw new Error('bus.provision() must run before leases are used');
      return leaseStore;
    },
    publish: (subject, data, o = {}) => {
      const send = async () => {
        try {
          const hdrs = toHeaders(o.headers);
          // The publisher seals the id with this connection's key (stream-publish).
          const ack = await streamPublisher(nc).publish(subject, data, {
            ...(hdrs ? { headers: hdrs } : {}),
            ...(o.msgId ? { msgId: o.msgId } : {}),
          });
          return { seq: ack.seq, duplicate: ack.duplicate };
        } catch (cause) {
          // A project's stream at its quota refused it: terminal, never retried.
          const quota = streamQuotaError(cause, subject.split('.')[2] ?? '');
          if (quota) throw quota;
          throw new RetryableError(`publish to ${subject} failed: ${(cause as Error).message}`, {
            cause,
          });
        }
      };
      if (!tracingEnabled()) return send();
      return withSpan(
        `${operationOf(subject)} publish`,
        {
          kind: SpanKind.PRODUCER,
          attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject },
        },
        send,
      );
    },
    publishCore: (subject, data, hdrs) => {
      nc.publish(subject, data, { headers: toHeaders(hdrs) });
    },
    consume: async (spec, o) => {
      await provisionConsumer(jsm, spec);
      const consumer = await js.consumers.get(spec.stream, spec.durable);
      return consume(consumer, {
        ...o,
        consumer: spec.durable,
        logger: log.child({ consumer: spec.durable }),
      });
    },
    consumeProjects: (spec, o) => consumeProjects({ nc, js, jsm, names, log }, spec, o),
    subscribe: (subject, onMessage) =>
      subscribeGuarded(nc, subject, {
        log,
        onMessage: (msg) => onMessage(msg.subject, msg.data),
      }),
    close: () => closeNats(nc, { timeoutMs: opts.drainTimeoutMs, logger: log }),
  };
}

/** A failure that a JetStream still electing leaders (or catching up) gives for a while. */
function isTransient(err: unknown): boolean {
  const message = err instanceof Error ? err.message : String(err);
  // "jetstream is not enabled": the account's JetStream is re-applied for a moment whenever its
  // JWT is pushed (the api pushes it at start and at every revocation), as well as at boot.
  return /timeout|temporarily unavailable|no responders|no suitable peers|insufficient resources|jetstream is not enabled/i.test(
    message,
  );
}
