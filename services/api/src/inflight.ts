// Open requests per key: a key (or the admin key, or a project's OAuth tokens together) holds at
// most [api] max_inflight_requests_per_key requests open at once on an instance, event streams
// and long waits (POST /executions with wait_ms) included. What bounds the connections one
// tenant can hold open with valid requests; the per-address cap (connection-guard.ts) bounds
// those of anyone, key or not. Counted after authentication (a global preHandler runs after the
// routes' onRequest hooks), released when the response closes, finished or cut.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createSlots } from './slots.ts';

/** A global preHandler hook that takes the request's place or refuses it (429 inflight_limit). */
export function inflightLimit(
  perKey: number,
): (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void {
  const slots = createSlots({
    what: 'open requests',
    // The instance's total is bounded by its connections (max_connections).
    total: Infinity,
    perOwner: perKey,
    owner: 'key',
    totalSetting: 'max_connections',
    perOwnerSetting: 'max_inflight_requests_per_key',
    totalCode: 'connection_capacity',
    perOwnerCode: 'inflight_limit',
  });
  return (req, reply, done) => {
    const p = req.principal;
    if (!p) return done();
    const owner =
      p.kind === 'admin' ? 'admin' : p.keyId === 'oauth' ? `oauth:${p.projectId}` : p.keyId;
    let release: () => void;
    try {
      release = slots.take(owner);
    } catch (err) {
      return done(err as Error);
    }
    reply.raw.once('close', release);
    done();
  };
}
