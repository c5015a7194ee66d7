// Stage 5, quota: the project's limits on calls, checked before the handler runs. Its call rate
// (bus-rate.ts), counted once per call on its first delivery (a redelivery was counted when it
// first came this far, or filed before), and its calls in flight across every instance
// (call-slot.ts), whose slot is given back before the result goes out.
import type { Lease } from '@toolmesh/bus';
import type { CallsStore, RegistryStore } from '@toolmesh/store';
import { createBusRate } from '../bus-rate.ts';
import { takeCallSlot } from '../call-slot.ts';
import { releasingOnError, type CallInHand, type ServiceParts, type Settled } from './context.ts';
import type { CallIds } from './intake.ts';

export interface Quota {
  /** Undefined when the call may run (holding a slot when there is a quota); else its filing. */
  admit(c: CallInHand, lease: Lease | undefined, timeoutMs: number): Promise<Settled | undefined>;
  /** Gives the call's slot back; never fails the call (an unreleased slot lapses on its own). */
  release(c: CallInHand): Promise<void>;
}

export interface QuotaOptions {
  store: CallsStore & RegistryStore;
  /** Calls of one project in flight at once; 0: no quota. */
  callsPerProject: number;
  /** Calls a project may start a minute, unless its settings say otherwise; 0: no rate. */
  callsPerMinute: number;
}

export function createQuota(parts: ServiceParts, o: QuotaOptions): Quota {
  const busRate = createBusRate(o.store, o.callsPerMinute);
  const slots = o.callsPerProject;
  const takeSlot = (ids: CallIds, timeoutMs: number) =>
    takeCallSlot(o.store, ids, parts.instanceId, timeoutMs, slots);
  return {
    admit: async (c, lease, timeoutMs) => {
      const { ids, clog } = c;
      if (c.d.deliveryCount === 1) {
        const limited = await releasingOnError(lease, busRate.take(ids.project));
        if (limited) {
          clog.info(limited.error?.details ?? {}, 'call refused: project over its call rate');
          return { disposition: await parts.finish(ids, limited, lease, clog) };
        }
      }
      if (slots > 0) {
        const refused = await releasingOnError(lease, takeSlot(ids, timeoutMs));
        if (refused) {
          clog.info(refused.error?.details ?? {}, 'call refused: project at its call quota');
          return { disposition: await parts.finish(ids, refused, lease, clog) };
        }
      }
      return undefined;
    },
    release: async ({ ids, clog }) => {
      if (slots <= 0) return;
      await o.store.quotas
        .releaseCall(ids.project, ids.toolCallId)
        .catch((err: unknown) => clog.warn({ err }, 'releasing the call slot failed'));
    },
  };
}
