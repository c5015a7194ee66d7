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

export async function provisionStreams(
  jsm: JetStreamManager,
  subjects: Subjects,
  names: Names,
  s: StreamSettings,
): Promise<void> {
  const common = {
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    duplicate_window: s.dedupeWindowSec * 1000 * NS,
    num_replicas: s.replicas ?? 1,
  };
  await upsertStream(jsm, {
    ...common,
    name: names.commandStream,
    subjects: subjects.commandStreamSubjects(),
    max_age: s.cmdMaxAgeSec * 1000 * NS,
  });
  await upsertStream(jsm, {
    ...common,
    name: names.eventStream,
    subjects: subjects.eventStreamSubjects(),
    max_age: s.evtMaxAgeSec * 1000 * NS,
  });
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
