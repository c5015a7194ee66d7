// Idempotent provisioning of the mesh's streams, the lease bucket and durable consumers: every
// process may run it at start; existing objects are updated in place, never recreated.
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
  type StreamConfig,
  type ConsumerConfig,
} from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { QuotasConfig } from '@toolmesh/config';
import type { Names, Subjects } from '@toolmesh/protocol';

const NS = 1_000_000;

export interface StreamSettings {
  cmdMaxAgeSec: number;
  evtMaxAgeSec: number;
  dedupeWindowSec: number;
  leaseBucketMaxAgeSec: number;
  /** Copies of each stream and of the lease bucket on a NATS cluster (1 on a single server). */
  replicas?: number;
  /** How long a start keeps retrying while JetStream is not ready (60 s by default). */
  provisionTimeoutMs?: number;
}

export interface ConsumerSpec {
  durable: string;
  stream: string;
  filter: string;
  ackWaitMs: number;
  /** -1 for unlimited deliveries. */
  maxDeliver: number;
  /** Bounds unacked messages across all instances sharing the durable. */
  maxAckPending: number;
}

async function upsertStream(
  jsm: JetStreamManager,
  cfg: Partial<StreamConfig> & { name: string },
): Promise<void> {
  try {
    const info = await jsm.streams.info(cfg.name);
    const { name: _name, storage: _storage, retention: _retention, ...mutable } = cfg;
    await jsm.streams.update(cfg.name, { ...info.config, ...mutable });
  } catch (err) {
    if (!isNotFound(err)) throw err;
    await jsm.streams.add(cfg);
  }
}

/**
 * The event stream. Commands have a stream per project (provisionProjectStream), made by the api
 * when a project is created, gets a bus credential or has its quotas changed.
 */
export async function provisionStreams(
  jsm: JetStreamManager,
  subjects: Subjects,
  names: Names,
  s: StreamSettings,
): Promise<void> {
  await upsertStream(jsm, {
    ...commonOf(s),
    name: names.eventStream,
    subjects: subjects.eventStreamSubjects(),
    max_age: s.evtMaxAgeSec * 1000 * NS,
  });
}

/** What one project may keep on its command stream ([quotas] bus_*, or the project's own). */
export interface ProjectStreamLimits {
  maxBytes: number;
  maxMessages: number;
  maxMessageBytes: number;
}

/** The limits that apply to a project: its own values ([quotas] overrides), else the config's. */
export function projectStreamLimitsOf(
  quotas: Pick<QuotasConfig, 'bus_max_bytes' | 'bus_max_messages' | 'bus_max_message_bytes'>,
  own: { bus_max_bytes?: number; bus_max_messages?: number; bus_max_message_bytes?: number } = {},
): ProjectStreamLimits {
  return {
    maxBytes: own.bus_max_bytes ?? quotas.bus_max_bytes,
    maxMessages: own.bus_max_messages ?? quotas.bus_max_messages,
    maxMessageBytes: own.bus_max_message_bytes ?? quotas.bus_max_message_bytes,
  };
}

/**
 * Creates or updates one project's command stream with its limits. Discard `new`: a publish that
 * would pass a limit is refused with JetStream's "maximum messages/bytes exceeded" (or "message
 * size exceeds maximum allowed"), so the publisher learns its call was not stored, and nothing
 * already accepted is dropped to make room. Its dedupe window is the project's alone.
 */
export async function provisionProjectStream(
  jsm: JetStreamManager,
  subjects: Subjects,
  names: Names,
  project: string,
  s: Pick<StreamSettings, 'cmdMaxAgeSec' | 'dedupeWindowSec' | 'replicas'>,
  limits: ProjectStreamLimits,
): Promise<void> {
  await upsertStream(jsm, {
    ...commonOf(s),
    discard: DiscardPolicy.New,
    name: names.projectCommandStream(project),
    subjects: subjects.projectCommandStreamSubjects(project),
    max_age: s.cmdMaxAgeSec * 1000 * NS,
    max_bytes: limits.maxBytes,
    max_msgs: limits.maxMessages,
    max_msg_size: limits.maxMessageBytes,
  });
}

function commonOf(s: Pick<StreamSettings, 'dedupeWindowSec' | 'replicas'>) {
  return {
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    duplicate_window: s.dedupeWindowSec * 1000 * NS,
    num_replicas: s.replicas ?? 1,
  };
}

/** Opens (creating if needed) the lease bucket; its max age bounds the bucket's growth. */
export async function provisionLeaseBucket(
  nc: NatsConnection,
  jsm: JetStreamManager,
  names: Names,
  maxAgeSec: number,
  replicas = 1,
): Promise<KV> {
  // nats-server 2.9 has no per-key TTL: leases carry their own expiry in the value instead.
  const kv = await new Kvm(nc).create(names.leaseBucket, {
    history: 1,
    ttl: maxAgeSec * 1000,
    replicas,
  });
  // Kvm.create opens an existing bucket as it is, so a changed max age or replica count is
  // applied here.
  const { config } = (await kv.status()).streamInfo;
  const maxAge = maxAgeSec * 1000 * NS;
  if (config.max_age !== maxAge || config.num_replicas !== replicas) {
    await jsm.streams.update(config.name, { ...config, max_age: maxAge, num_replicas: replicas });
  }
  return kv;
}

export async function provisionConsumer(jsm: JetStreamManager, spec: ConsumerSpec): Promise<void> {
  const cfg: Partial<ConsumerConfig> = {
    durable_name: spec.durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: spec.filter,
    ack_wait: spec.ackWaitMs * NS,
    max_deliver: spec.maxDeliver,
    max_ack_pending: spec.maxAckPending,
  };
  try {
    await jsm.consumers.info(spec.stream, spec.durable);
    await jsm.consumers.update(spec.stream, spec.durable, cfg);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    try {
      await jsm.consumers.add(spec.stream, cfg);
    } catch (addErr) {
      // Another instance created it between our info and add: that is the same consumer.
      if (!/already exists|in use/i.test((addErr as Error).message)) throw addErr;
    }
  }
}

function isNotFound(err: unknown): boolean {
  return (
    err instanceof JetStreamApiError &&
    (err.code === JetStreamApiCodes.StreamNotFound ||
      err.code === JetStreamApiCodes.ConsumerNotFound)
  );
}
