// A project's live feed, for the events route: its tool calls as they are published, results,
// progress, agent task/step/state events and the model's streamed chunks. Everything is read
// through what the api's NATS user is granted: events and chunks by core subscription (`evt.>`
// and `str.>` of the project), the calls through an ephemeral consumer of the command stream
// delivering to the api's inbox, since the api may publish `cmd` subjects but never subscribe
// to them (docs/protocol.md, "The live feed"). Every subject is rooted at the project's id, so
// a feed only ever carries its own project's events.
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { nuid } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { followStream, subscribeGuarded, type Follow } from '@toolmesh/bus';
import { createNames, createSubjects } from '@toolmesh/protocol';

/** What an event's subject says, after `<root>.v1.<project>.<channel>.`. */
export interface LiveEvent {
  /** e.g. `tool.call`, `tool.result`, `tool.progress`, `agent.task`, `agent.step`, `agent.chunk` */
  kind: string;
  channel: string;
  /** The target of a tool event, the agent of an agent event. */
  name: string;
  body: unknown;
}

export function describe(subject: string): Omit<LiveEvent, 'body'> | undefined {
  // <root>.v1.<project>.<channel>.<cmd|evt|str>.<tool|agent>.<name>.<what>
  const t = subject.split('.');
  const [, , , channel, cls, family, name, what] = t;
  if (!channel || !cls || !family || !name || !what) return undefined;
  if (cls === 'cmd' && family === 'tool') return { kind: 'tool.call', channel, name };
  if (cls === 'evt' && (family === 'tool' || family === 'agent'))
    return { kind: `${family}.${what}`, channel, name };
  if (cls === 'str' && family === 'agent') return { kind: 'agent.chunk', channel, name };
  return undefined;
}

function bodyOf(m: Msg): unknown {
  try {
    return m.json();
  } catch {
    return null;
  }
}

export interface LiveFeedOptions {
  nc: NatsConnection;
  root: string;
  project: string;
  /** A child logger with the project's id. */
  log: Logger;
  /** Each event, in the order NATS delivered it (calls and events come on separate paths). */
  onEvent(e: LiveEvent): void;
  /**
   * The feed ended on its own: the server refused one of its subscriptions or dropped its
   * consumer (logged already). Everything is released; the watcher should connect again.
   */
  onEnd(err: Error): void;
}

export interface LiveFeed {
  /** Releases the subscriptions and deletes the consumer; idempotent. */
  close(): Promise<void>;
}

/** Opens the feed; resolves once everything is subscribed (nothing published later is missed). */
export async function openLiveFeed(o: LiveFeedOptions): Promise<LiveFeed> {
  const subjects = createSubjects(o.root);
  const names = createNames(o.root);
  let closed = false;
  let opened = false;
  let failedEarly: Error | undefined;
  let calls: Follow | undefined;
  const forward = (m: Msg) => {
    if (closed) return;
    const d = describe(m.subject);
    if (d) o.onEvent({ ...d, body: bodyOf(m) });
  };
  const close = async () => {
    if (closed) return;
    closed = true;
    for (const s of subs) s.unsubscribe();
    await calls?.stop();
  };
  const end = (err: Error) => {
    if (closed) return;
    void close();
    // Before the route holds the feed, the failure is the open's to report.
    if (opened) o.onEnd(err);
    else failedEarly = err;
  };
  const subs: Subscription[] = subjects
    .projectActivityFilters(o.project)
    .map((filter) =>
      subscribeGuarded(o.nc, filter, { log: o.log, onMessage: forward, onRefused: end }),
    );
  try {
    calls = await followStream(o.nc, {
      stream: names.projectCommandStream(o.project),
      filter: subjects.projectToolCallsFilter(o.project),
      name: names.liveFeedConsumer(o.project, nuid.next()),
      log: o.log,
      onMessage: forward,
      onEnd: end,
    });
    // The subscriptions are in place at the server once this round trip is back.
    await o.nc.flush();
  } catch (err) {
    await close();
    throw err;
  }
  if (failedEarly) {
    // A subscription was refused while the consumer was being made: close() ran before it.
    await calls.stop();
    throw failedEarly;
  }
  opened = true;
  return { close };
}
