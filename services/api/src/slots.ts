// Counted slots with two caps: one for the whole instance and one per owner (a project, a key).
// What one tenant may hold of a shared resource (MCP sessions, event streams, open requests):
// without the per-owner cap one project could fill the instance's share and every other
// project would be refused until its sessions went idle. A refusal names which cap was hit, so
// the client can tell its own share (429: it may free some) from a full instance (503: nothing
// it did).
import type { FastifyReply } from 'fastify';
import { exemptFromIdleTimeout } from './connection-guard.ts';
import { ApiError, type ApiErrorCode } from './errors.ts';

export interface SlotsOptions {
  /** What is counted, for messages: "MCP sessions", "event streams". */
  what: string;
  total: number;
  perOwner: number;
  /** Whose share perOwner is, for messages: "project", "key". */
  owner: string;
  /** The configuration keys of the two caps, named in the refusal. */
  totalSetting: string;
  perOwnerSetting: string;
  /** The error codes of the two refusals. */
  totalCode: ApiErrorCode;
  perOwnerCode: ApiErrorCode;
}

export interface Slots {
  /**
   * Takes a slot for the owner, or throws an ApiError naming the cap (429 for the owner's,
   * 503 for the instance's). The returned release is idempotent.
   */
  take(owner: string): () => void;
  /** Slots held: by one owner, or in all. */
  held(owner?: string): number;
}

export function createSlots(o: SlotsOptions): Slots {
  const byOwner = new Map<string, number>();
  let total = 0;
  return {
    take(owner) {
      const mine = byOwner.get(owner) ?? 0;
      if (mine >= o.perOwner) {
        throw new ApiError(
          o.perOwnerCode,
          `this ${o.owner} holds ${o.perOwner} ${o.what} on this instance already ([api] ${o.perOwnerSetting}); close one first`,
          { limit: o.perOwner, setting: `api.${o.perOwnerSetting}` },
        );
      }
      if (total >= o.total) {
        throw new ApiError(
          o.totalCode,
          `this instance holds ${o.total} ${o.what} already ([api] ${o.totalSetting}); retry later`,
          { limit: o.total, setting: `api.${o.totalSetting}` },
        );
      }
      byOwner.set(owner, mine + 1);
      total++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        total--;
        const left = (byOwner.get(owner) ?? 1) - 1;
        if (left === 0) byOwner.delete(owner);
        else byOwner.set(owner, left);
      };
    },
    held: (owner) => (owner === undefined ? total : (byOwner.get(owner) ?? 0)),
  };
}

/**
 * Counts the event stream this request opens against its project's and the instance's share
 * until the response closes; its socket is exempt from connection_timeout_ms meanwhile.
 */
export function holdStream(streams: Slots, project: string, reply: FastifyReply): void {
  const release = streams.take(project);
  reply.raw.once('close', release);
  exemptFromIdleTimeout(reply.raw);
}
