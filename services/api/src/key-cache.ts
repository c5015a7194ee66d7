// Verified project keys, kept for a moment. Every request is authenticated (auth.ts), and one
// database read per request was the largest cost of a call through the MCP facade after the call
// itself. A key found valid is trusted for [api] auth_cache_ttl_ms at most; revoking it drops it
// at once on the instance that revoked it and, through the bus event `evt.sys.key.revoked`
// (published and flushed before the revoke route answers), on every other instance. A lookup
// that raced a revocation is not kept. Only valid keys are kept, so a key created a moment ago
// works at once and an unknown one is read (and counted by the failure limiter) every time.
// Entries are held under the key's SHA-256, never the key.
import { createHash } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { subscribeGuarded } from '@toolmesh/bus';
import { decodeMessage, encodeMessage, type Subjects } from '@toolmesh/protocol';
import type { RegistryStore } from '@toolmesh/store';

/** The key's project, id and role, as the store resolves it. */
export type VerifiedKey = NonNullable<Awaited<ReturnType<RegistryStore['projects']['resolveKey']>>>;

export interface KeyCache {
  /** The key's project and id if it is valid (not revoked), else undefined. */
  resolve(key: string): Promise<VerifiedKey | undefined>;
  /** Drops a revoked key here and tells the other api instances. */
  revoked(project: string, keyId: string): Promise<void>;
  close(): void;
}

/** Past this the revoke route answers anyway; the other instances' TTL bounds the gap. */
const FLUSH_WAIT_MS = 1_000;

export function createKeyCache(o: {
  store: RegistryStore;
  nc: NatsConnection;
  subjects: Subjects;
  ttlMs: number;
  logger: Logger;
  /** Most keys kept; the oldest go first. */
  maxEntries?: number;
}): KeyCache {
  const max = o.maxEntries ?? 10_000;
  const cache = new Map<string, { key: VerifiedKey; at: number }>();
  /** Bumped on every revocation: a lookup started before one is not kept. */
  let epoch = 0;
  const log = o.logger.child({ component: 'auth' });

  function drop(keyId: string) {
    epoch++;
    for (const [k, v] of cache) if (v.key.keyId === keyId) cache.delete(k);
  }

  // Refused (a permissions bug), other instances' revocations would go unheard: logged.
  const sub = subscribeGuarded(o.nc, o.subjects.keyRevokedFilter(), {
    log,
    onMessage: (msg) => {
      try {
        drop(decodeMessage('key_revoked', msg.data).key_id);
      } catch (e) {
        log.warn({ err: e, subject: msg.subject }, 'ignoring a malformed key revocation');
      }
    },
  });

  return {
    resolve: async (key) => {
      if (o.ttlMs === 0) return o.store.projects.resolveKey(key);
      const h = createHash('sha256').update(key).digest('base64');
      const hit = cache.get(h);
      if (hit && Date.now() - hit.at < o.ttlMs) return hit.key;
      const started = epoch;
      const found = await o.store.projects.resolveKey(key);
      if (epoch !== started) return found;
      cache.delete(h);
      if (found) {
        cache.set(h, { key: found, at: Date.now() });
        if (cache.size > max) cache.delete(cache.keys().next().value!);
      }
      return found;
    },
    revoked: async (project, keyId) => {
      drop(keyId);
      try {
        o.nc.publish(
          o.subjects.keyRevoked(project),
          encodeMessage('key_revoked', { v: 1, key_id: keyId }),
        );
        await Promise.race([
          o.nc.flush(),
          new Promise<void>((resolve) => setTimeout(resolve, FLUSH_WAIT_MS).unref()),
        ]);
      } catch (err) {
        log.warn({ err, project, key_id: keyId }, 'could not announce a key revocation');
      }
    },
    close: () => sub.unsubscribe(),
  };
}
