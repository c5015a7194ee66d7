// One durable consumer over every project's command stream, with the process's slots shared
// between projects. Each project stream has its own pull loop (a lane, consume.ts) so a backlog
// in one stream never stands in front of another's messages; a lane's messages then wait for one
// of the process's `concurrency` slots, which are handed out round robin between the projects
// waiting: when a slot frees, the project that has waited longest since it was last served gets
// it. A project alone may use every slot; two busy projects get half each; a project with one
// call waits for at most one slot to free, however deep another project's backlog is. With
// `maxProjectInFlight`, a project holds at most that many slots while another is active, so the
// other's calls find a slot free and run beside fewer of a flood's calls.
//
// Streams are found by name (`Names.commandStreamPrefix`): listed at start and every
// `discoveryIntervalMs`, and at once when JetStream announces a new stream (its
// STREAM.CREATED advisory), so a call to a project created a moment ago is not left waiting.
import { setTimeout as sleep } from 'node:timers/promises';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { Names } from '@toolmesh/protocol';
import { consume, type ConsumeOptions, type Consumption, type DeliveryHandler } from './consume.ts';
import { provisionConsumer, type ConsumerSpec } from './provision.ts';
import { subscribeGuarded } from './subscribe.ts';

/** A durable on every project command stream; the filter is built per project. */
export interface ProjectConsumerSpec extends Omit<ConsumerSpec, 'stream' | 'filter'> {
  filter(project: string): string;
}

export interface ProjectsConsumeOptions extends Omit<ConsumeOptions, 'logger' | 'consumer'> {
  /** How often the project streams are listed again (besides the creation advisories). */
  discoveryIntervalMs?: number;
  /**
   * Slots one project may hold while another project is active (createFairSlots' maxPerKey);
   * a project alone may use every slot. 0 or absent: no cap.
   */
  maxProjectInFlight?: number;
}

/** The JetStream advisory a server publishes when a stream is created (the token: its name). */
export const STREAM_CREATED_ADVISORY = '$JS.EVENT.ADVISORY.STREAM.CREATED.*';

const DEFAULT_DISCOVERY_MS = 5_000;

export interface FairSlots {
  /** Resolves with a release once a slot is this key's; with undefined once closed. */
  acquire(key: string): Promise<(() => void) | undefined>;
  busy(): number;
  /** Answers every waiter (and every later acquire) with undefined. */
  close(): void;
}

export interface FairSlotsOptions {
  /**
   * Slots one key may hold while a light neighbour is active (another key under this cap that
   * waits for a slot or held one within `activeWindowMs`); otherwise round robin alone.
   * 0 or absent: no cap.
   */
  maxPerKey?: number;
  activeWindowMs?: number;
  now?: () => number;
}

/** How long a key counts as active after it last took or gave back a slot. */
const DEFAULT_ACTIVE_WINDOW_MS = 1_000;

/**
 * `n` slots handed out round robin between the keys waiting for one. With `maxPerKey`, a key
 * holds at most that many while a light neighbour is active (another key under the cap that
 * waits for a slot or held one within `activeWindowMs`), and the rest stay free: the
 * neighbour's next call starts at once, beside at most `maxPerKey` of a flood's, instead of
 * waiting for a slot and then running beside all the others. The window keeps the cap in place
 * between the calls of a neighbour calling one at a time. Busy keys share by round robin.
 */
export function createFairSlots(n: number, o: FairSlotsOptions = {}): FairSlots {
  let free = n;
  let closed = false;
  const cap = o.maxPerKey && o.maxPerKey < n ? o.maxPerKey : n;
  const windowMs = o.activeWindowMs ?? DEFAULT_ACTIVE_WINDOW_MS;
  const now = o.now ?? Date.now;
  // Insertion order is the round: the first key waiting is served, then goes to the back.
  const waiting = new Map<string, Array<(r: (() => void) | undefined) => void>>();
  const held = new Map<string, number>();
  const seen = new Map<string, number>();
  let recheck: NodeJS.Timeout | undefined;

  // A light neighbour: active and under the cap (one calling one at a time, a few at once, or a
  // newcomer waiting). Keys at the cap share by round robin alone: two floods are not held to
  // the cap each while the slots stand idle.
  const lightNeighbour = (key: string): boolean => {
    for (const k of waiting.keys()) if (k !== key && (held.get(k) ?? 0) < cap) return true;
    const t = now();
    for (const [k, at] of seen) {
      if (k === key) continue;
      const h = held.get(k) ?? 0;
      if (h === 0 && t - at >= windowMs) {
        seen.delete(k); // idle past the window: forgotten
        continue;
      }
      if (h < cap) return true;
    }
    return false;
  };
  const mayTake = (key: string): boolean =>
    cap === n || (held.get(key) ?? 0) < cap || !lightNeighbour(key);
  const take = (key: string): (() => void) => {
    free--;
    held.set(key, (held.get(key) ?? 0) + 1);
    if (cap < n) {
      seen.delete(key);
      seen.set(key, now());
    }
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const h = (held.get(key) ?? 1) - 1;
      if (h > 0) held.set(key, h);
      else held.delete(key);
      if (cap < n) seen.set(key, now());
      free++;
      pump();
    };
  };
  // Grants free slots to the first waiting keys that may take one; a key held back by the cap
  // keeps its place, and is looked at again once the others' activity may have lapsed.
  function pump(): void {
    let blocked = false;
    while (free > 0 && !closed) {
      let granted = false;
      for (const [key, queue] of waiting) {
        if (!mayTake(key)) {
          blocked = true;
          continue;
        }
        const grant = queue.shift()!;
        waiting.delete(key);
        if (queue.length > 0) waiting.set(key, queue);
        grant(take(key));
        granted = true;
        break;
      }
      if (!granted) break;
    }
    if (blocked && free > 0 && !closed && recheck === undefined) {
      recheck = setTimeout(() => {
        recheck = undefined;
        pump();
      }, windowMs);
      recheck.unref();
    }
  }
  return {
    acquire: (key) => {
      if (closed) return Promise.resolve(undefined);
      if (free > 0 && !waiting.has(key) && mayTake(key)) {
        // Keys ahead that may take a slot are served first (they are granted as slots free,
        // so they wait only while none is free, or while the cap holds them back).
        let ahead = false;
        for (const k of waiting.keys()) if (mayTake(k)) ahead = true;
        if (!ahead) return Promise.resolve(take(key));
      }
      return new Promise((resolve) => {
        const queue = waiting.get(key);
        if (queue) queue.push(resolve);
        else waiting.set(key, [resolve]);
        pump();
      });
    },
    busy: () => n - free,
    close: () => {
      closed = true;
      if (recheck) clearTimeout(recheck);
      for (const queue of waiting.values()) for (const w of queue) w(undefined);
      waiting.clear();
    },
  };
}

interface Deps {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  names: Names;
  log: Logger;
}

export async function consumeProjects(
  deps: Deps,
  spec: ProjectConsumerSpec,
  opts: ProjectsConsumeOptions,
): Promise<Consumption> {
  const { names, jsm, js } = deps;
  const log = deps.log.child({ consumer: spec.durable });
  const slots = createFairSlots(opts.concurrency, { maxPerKey: opts.maxProjectInFlight ?? 0 });
  const lanes = new Map<string, Promise<Consumption | undefined>>();
  let stopping = false;

  const fair =
    (project: string, handler: DeliveryHandler): DeliveryHandler =>
    async (d) => {
      const release = await slots.acquire(project);
      // Stopping: the message goes back at once, for another instance.
      if (release === undefined) return { type: 'nak', delayMs: 0 };
      try {
        return await handler(d);
      } finally {
        release();
      }
    };

  const open = (project: string): void => {
    if (lanes.has(project) || stopping) return;
    const stream = names.projectCommandStream(project);
    const lane = (async () => {
      try {
        await provisionConsumer(jsm, { ...spec, stream, filter: spec.filter(project) });
        const consumer = await js.consumers.get(stream, spec.durable);
        if (stopping) return undefined;
        return consume(consumer, {
          ...opts,
          handler: fair(project, opts.handler),
          consumer: spec.durable,
          logger: log.child({ project }),
        });
      } catch (err) {
        // Tried again at the next discovery (a stream deleted meanwhile, JetStream busy).
        log.warn({ err, project }, 'consuming a project command stream failed to start');
        lanes.delete(project);
        return undefined;
      }
    })();
    lanes.set(project, lane);
  };

  const discover = async (): Promise<void> => {
    const seen = new Set<string>();
    for await (const name of jsm.streams.names()) {
      const project = names.projectOfCommandStream(name);
      if (project === undefined) continue;
      seen.add(project);
      open(project);
    }
    // A stream gone (a project removed, a reset): its lane stops pulling from nothing.
    for (const [project, lane] of lanes) {
      if (seen.has(project)) continue;
      lanes.delete(project);
      void lane.then((c) => c?.stop(0));
    }
  };

  await discover();
  const advisories: Subscription = subscribeGuarded(deps.nc, STREAM_CREATED_ADVISORY, {
    log,
    onMessage: (msg) => {
      const project = names.projectOfCommandStream(msg.subject.split('.').at(-1) ?? '');
      if (project !== undefined) open(project);
    },
  });
  const interval = opts.discoveryIntervalMs ?? DEFAULT_DISCOVERY_MS;
  const wake = new AbortController();
  const loop = (async () => {
    while (!stopping) {
      await sleep(interval, undefined, { signal: wake.signal }).catch(() => undefined);
      if (stopping) break;
      await discover().catch((err: unknown) =>
        log.warn({ err }, 'listing the project command streams failed'),
      );
    }
  })();

  const all = async (): Promise<Consumption[]> =>
    (await Promise.all(lanes.values())).filter((c): c is Consumption => c !== undefined);

  return {
    inFlight: () => slots.busy(),
    backlog: async () => {
      let n = 0;
      for (const c of await all()) n += await c.backlog();
      return n;
    },
    stop: async (graceMs) => {
      stopping = true;
      wake.abort();
      advisories.unsubscribe();
      const lanesNow = await all();
      // Messages still waiting for a slot go back at once; those running get the grace.
      slots.close();
      await Promise.all(lanesNow.map((c) => c.stop(graceMs)));
      await loop;
    },
  };
}
