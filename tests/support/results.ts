// Collects result events of one project and channel, so tests can await the result of calls
// they published by hand (raw NATS, bad bodies) and count how many events each call produced.
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { decodeMessage, type Subjects, type ToolResultEvent } from '@toolmesh/protocol';

export interface ResultCollector {
  events: ToolResultEvent[];
  waitFor(toolCallId: string, timeoutMs?: number): Promise<ToolResultEvent>;
  /** Resolves once every id has at least one result event. */
  waitForAll(ids: Iterable<string>, timeoutMs: number): Promise<Map<string, ToolResultEvent[]>>;
  close(): void;
}

export async function collectResults(
  nc: NatsConnection,
  subjects: Subjects,
  scope: { project: string; channel: string },
): Promise<ResultCollector> {
  const events: ToolResultEvent[] = [];
  const byId = new Map<string, ToolResultEvent[]>();
  let notify: (() => void) | undefined;
  const sub: Subscription = nc.subscribe(subjects.toolResultFilter(scope), {
    callback: (_err, msg) => {
      const ev = decodeMessage('tool_result', msg.data);
      events.push(ev);
      const list = byId.get(ev.tool_call_id) ?? [];
      list.push(ev);
      byId.set(ev.tool_call_id, list);
      notify?.();
    },
  });
  await nc.flush();

  async function until(done: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what()}`);
      await new Promise<void>((r) => {
        notify = r;
        setTimeout(r, Math.min(left, 200));
      });
    }
  }

  return {
    events,
    waitFor: async (id, timeoutMs = 10_000) => {
      await until(
        () => byId.has(id),
        timeoutMs,
        () => `a result for ${id}`,
      );
      return byId.get(id)![0]!;
    },
    waitForAll: async (ids, timeoutMs) => {
      const want = [...ids];
      await until(
        () => want.every((id) => byId.has(id)),
        timeoutMs,
        () => `${want.filter((id) => !byId.has(id)).length} of ${want.length} results`,
      );
      return byId;
    },
    close: () => sub.unsubscribe(),
  };
}
