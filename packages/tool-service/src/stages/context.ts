// What the stages of a call share: the service's parts, fixed when it is made, and the call in
// hand as it passes from stage to stage (service.ts composes them).
import type { Logger } from 'pino';
import type { Bus, Delivery, Disposition, Lease } from '@toolmesh/bus';
import type { CallsStore, RegistryStore } from '@toolmesh/store';
import type { ToolResultContent } from '@toolmesh/protocol';
import type { CallCost } from '../define.ts';
import type { ToolServiceLimits } from '../limits.ts';
import type { CallIds } from './intake.ts';

/** Files a result as the call's one card and publishes it (finish.ts); settles the message. */
export type Finish = (
  ids: CallIds,
  content: ToolResultContent,
  lease: Lease | undefined,
  clog: Logger,
  metadata?: Record<string, unknown>,
  cost?: CallCost,
) => Promise<Disposition>;

export interface ServiceParts {
  bus: Bus;
  store: CallsStore & RegistryStore;
  limits: ToolServiceLimits;
  instanceId: string;
  /** The service's name: its target (a static service) or the registry service's name. */
  name: string;
  finish: Finish;
  /** Answers a copy of a call that has its card already with that card; undefined when none. */
  reemit(ids: CallIds, clog: Logger): Promise<Disposition | undefined>;
  /** The call's arguments as the execution row keeps them (capped). */
  argumentsOf(ids: CallIds): unknown;
}

/** One delivery, as the stages pass it on. */
export interface CallInHand {
  d: Delivery;
  ids: CallIds;
  clog: Logger;
  /** performance.now() when the delivery came in: the result's duration counts from here. */
  started: number;
  /** The server will not deliver this message again. */
  lastDelivery: boolean;
}

/** A stage's answer when the call goes no further: how its message is settled. */
export interface Settled {
  disposition: Disposition;
}

/** Waits for `p`; when it fails, lets the call's lease go first (the redelivery retakes it). */
export async function releasingOnError<T>(lease: Lease | undefined, p: Promise<T>): Promise<T> {
  return p.catch(async (err: unknown) => {
    await lease?.release().catch(() => undefined);
    throw err;
  });
}
