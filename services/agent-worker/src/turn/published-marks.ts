// Starts the deadlines of the calls a step published, a moment after their publish and off the
// step's path. A step used to wait for that write (state.turn_calls.published_at and
// deadline_at) after the publish: a third durable write per model step, on the same call rows
// that the tool's result then updates (the result could wait for its lock). Now the step hands
// the acknowledged ids over and ends; every `flushMs` the ids still unmarked are written in one
// statement, each call's deadline counted from its own acknowledgement. Most calls of a fast
// tool are answered by then, and the statement leaves answered calls alone: nothing is written.
//
// A call this instance dies before marking stays unpublished in Postgres; the scan publishes it
// again after a lease (the same id and Nats-Msg-Id make that harmless), as for a step that died
// between its commit and its publish. So the interval stays well under the lease.
import type { Logger } from 'pino';
import type { AgentsStore } from '@toolmesh/store';

export interface PublishedMarks {
  /** The calls were acknowledged by the stream now. */
  mark(projectId: string, toolCallIds: readonly string[]): void;
  /** Writes what waits; resolves when written (the runner's stop awaits it). */
  flush(): Promise<void>;
  start(): void;
  stop(): Promise<void>;
}

export function createPublishedMarks(o: {
  store: Pick<AgentsStore, 'turns'>;
  flushMs: number;
  logger: Logger;
}): PublishedMarks {
  let waiting = new Map<string, { ids: string[]; at: number[] }>();
  let timer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();

  const flush = () => {
    const batch = waiting;
    waiting = new Map();
    const now = performance.now();
    flushing = flushing.then(() =>
      Promise.all(
        [...batch].map(([projectId, { ids, at }]) =>
          o.store.turns
            .markPublished(
              projectId,
              ids,
              at.map((t) => now - t),
            )
            .catch((err: unknown) =>
              // Left to the scan, which publishes them again (see above).
              o.logger.warn({ err, project_id: projectId }, 'marking published calls failed'),
            ),
        ),
      ).then(() => undefined),
    );
    return flushing;
  };

  return {
    mark: (projectId, ids) => {
      if (ids.length === 0) return;
      const at = performance.now();
      const w = waiting.get(projectId) ?? { ids: [], at: [] };
      for (const id of ids) {
        w.ids.push(id);
        w.at.push(at);
      }
      waiting.set(projectId, w);
    },
    flush,
    start: () => {
      timer = setInterval(() => void flush(), o.flushMs);
    },
    stop: async () => {
      clearInterval(timer);
      await flush();
    },
  };
}
