// Idempotency leases in a KV bucket, one key per tool call. nats-server 2.9 has no per-key TTL,
// so the value carries its own expiry: acquire = create; an expired lease is taken over by a
// compare-and-set on the revision; a finished call leaves its key in state `done` with the card
// id, so a duplicate arriving later is answered without touching the handler or Postgres' write
// path. A cancel of a call nobody runs yet leaves a tombstone (state `canceled`) under the same
// key, so the call's own lease acquisition finds it at no extra cost. The bucket's max age bounds
// its growth.
import type { KV, KvEntry } from '@nats-io/kv';
import { RetryableError } from '@toolmesh/protocol';

export interface LeaseRecord {
  owner: string;
  /** Epoch milliseconds after which another owner may take the lease over. */
  expires_at: number;
  state: 'running' | 'done' | 'canceled';
  card_id?: string;
  /** Why a tombstone's call was canceled (state `canceled`). */
  reason?: string;
}

export interface Lease {
  readonly key: string;
  readonly record: LeaseRecord;
  /** True when this acquisition took over an expired lease of a crashed or stalled owner. */
  readonly takeover: boolean;
  /** Pushes the expiry forward; false when the lease was lost to another owner. */
  renew(): Promise<boolean>;
  /** Marks the call done; later duplicates see the card id. False when the lease was lost. */
  complete(cardId: string): Promise<boolean>;
  /** Gives the lease up (the work did not happen), so a retry can take it at once. */
  release(): Promise<void>;
}

export type AcquireResult =
  | { acquired: true; lease: Lease }
  | { acquired: false; state: 'running'; holder: LeaseRecord; expiresInMs: number }
  | { acquired: false; state: 'done'; holder: LeaseRecord }
  | { acquired: false; state: 'canceled'; holder: LeaseRecord };

/**
 * What a cancel found: `tombstoned` (the call has not started, or its owner's lease lapsed: the
 * next delivery ends it canceled), `running` (a live owner holds it; the live cancel reaches
 * it), `done` or `already` (an earlier cancel left its tombstone).
 */
export type CancelMark = 'tombstoned' | 'running' | 'done' | 'already';

export interface LeaseStore {
  acquire(key: string, owner: string, ttlMs: number): Promise<AcquireResult>;
  get(key: string): Promise<LeaseRecord | undefined>;
  /** Leaves a tombstone under the call's key unless a live owner or a finished call holds it. */
  cancel(key: string, reason: string): Promise<CancelMark>;
}

const encoder = new TextEncoder();
const encode = (r: LeaseRecord): Uint8Array => encoder.encode(JSON.stringify(r));

function decode(entry: KvEntry | null): LeaseRecord | undefined {
  if (!entry || entry.operation !== 'PUT') return undefined;
  try {
    return entry.json<LeaseRecord>();
  } catch {
    return undefined;
  }
}

export function createLeaseStore(kv: KV, now: () => number = Date.now): LeaseStore {
  function makeLease(
    key: string,
    record: LeaseRecord,
    revision: number,
    ttlMs: number,
    takeover: boolean,
  ): Lease {
    let rev = revision;
    let current = record;
    const write = async (next: LeaseRecord): Promise<boolean> => {
      try {
        rev = await kv.update(key, encode(next), rev);
        current = next;
        return true;
      } catch (err) {
        if (isWrongRevision(err)) return false;
        throw new RetryableError(`lease ${key}: ${(err as Error).message}`, { cause: err });
      }
    };
    return {
      key,
      takeover,
      get record() {
        return current;
      },
      renew: () => write({ ...current, expires_at: now() + ttlMs }),
      complete: (cardId) => write({ ...current, state: 'done', card_id: cardId }),
      release: async () => {
        try {
          await kv.delete(key, { previousSeq: rev });
        } catch (err) {
          if (!isWrongRevision(err))
            throw new RetryableError(`lease ${key}: ${(err as Error).message}`, { cause: err });
        }
      },
    };
  }

  async function acquire(key: string, owner: string, ttlMs: number): Promise<AcquireResult> {
    // A few rounds cover the races: the key deleted between create and get, or two takeovers.
    for (let round = 0; round < 5; round++) {
      const record: LeaseRecord = { owner, expires_at: now() + ttlMs, state: 'running' };
      try {
        const rev = await kv.create(key, encode(record));
        return { acquired: true, lease: makeLease(key, record, rev, ttlMs, false) };
      } catch (err) {
        if (!isWrongRevision(err) && !/exists/i.test((err as Error).message)) {
          throw new RetryableError(`lease ${key}: ${(err as Error).message}`, { cause: err });
        }
      }
      let entry: KvEntry | null;
      try {
        entry = await kv.get(key);
      } catch (err) {
        throw new RetryableError(`lease ${key}: ${(err as Error).message}`, { cause: err });
      }
      const holder = decode(entry);
      if (!entry || !holder) continue;
      if (holder.state === 'done') return { acquired: false, state: 'done', holder };
      // A tombstone never lapses: the call stays canceled however late it arrives.
      if (holder.state === 'canceled') return { acquired: false, state: 'canceled', holder };
      const left = holder.expires_at - now();
      if (left > 0) return { acquired: false, state: 'running', holder, expiresInMs: left };
      try {
        const rev = await kv.update(key, encode(record), entry.revision);
        return { acquired: true, lease: makeLease(key, record, rev, ttlMs, true) };
      } catch (err) {
        if (!isWrongRevision(err))
          throw new RetryableError(`lease ${key}: ${(err as Error).message}`, { cause: err });
      }
    }
    throw new RetryableError(`lease ${key}: contended, try again`);
  }

  async function cancel(key: string, reason: string): Promise<CancelMark> {
    const tombstone = encode({ owner: 'cancel', expires_at: now(), state: 'canceled', reason });
    const kvError = (err: unknown) =>
      new RetryableError(`cancel ${key}: ${(err as Error).message}`, { cause: err });
    for (let round = 0; round < 5; round++) {
      try {
        await kv.create(key, tombstone);
        return 'tombstoned';
      } catch (err) {
        if (!isWrongRevision(err) && !/exists/i.test((err as Error).message)) throw kvError(err);
      }
      let entry: KvEntry | null;
      try {
        entry = await kv.get(key);
      } catch (err) {
        throw kvError(err);
      }
      const holder = decode(entry);
      if (!entry || !holder) continue;
      if (holder.state === 'done') return 'done';
      if (holder.state === 'canceled') return 'already';
      if (holder.expires_at > now()) return 'running';
      // A lapsed lease: the call finished (its card answers any copy before the tombstone is
      // looked at) or its owner died and a redelivery is due, which must not run it.
      try {
        await kv.update(key, tombstone, entry.revision);
        return 'tombstoned';
      } catch (err) {
        if (!isWrongRevision(err)) throw kvError(err);
      }
    }
    throw new RetryableError(`cancel ${key}: contended, try again`);
  }

  return {
    acquire,
    get: async (key) => decode(await kv.get(key)),
    cancel,
  };
}

function isWrongRevision(err: unknown): boolean {
  // JetStream API error 10071: "wrong last sequence".
  return (
    typeof err === 'object' &&
    err !== null &&
    (('code' in err && err.code === 10071) ||
      /wrong last sequence/i.test(String((err as Error).message)))
  );
}
