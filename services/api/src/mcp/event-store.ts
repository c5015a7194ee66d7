// Resumable SSE streams of a 2025-era session (the 1.x SDK's EventStore): the messages sent on
// the session's streams, kept in the session's memory, so a client whose stream broke reconnects
// with GET and Last-Event-ID and gets what it missed (the 2025-11-25 revision's resumability; the
// 2026-07-28 revision has none). The session is in this instance's memory anyway: a client that
// reaches another instance starts a new session, and its idempotency keys make re-sent calls
// the same calls.
//
// Bounded: a session keeps its newest MAX_EVENTS events and at most MAX_BYTES of them (the newest
// is kept whatever its size); a resume from an older id gets what is left of its stream, and one
// whose stream has nothing left is refused (400) by the SDK. An event id is
// `<stream id>:<sequence>`, so the stream is known from the id alone. A priming event (the SDK's
// `{}`, or `prime()`) holds a place in its stream and is never replayed.
import type {
  EventId,
  EventStore,
  StreamId,
} from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

const MAX_EVENTS = 100;
// So 1000 sessions (the default [api] mcp_max_sessions) keep about 256 MiB at most.
const MAX_BYTES = 262_144;

interface Stored {
  stream: StreamId;
  seq: number;
  /** Undefined for a priming event. */
  message: JSONRPCMessage | undefined;
  bytes: number;
}

export interface SessionEventStore extends EventStore {
  /** Places a priming event in a stream at once (synchronously) and returns its id. */
  prime(stream: StreamId): EventId;
}

export function createSessionEventStore(
  limits: { maxEvents?: number; maxBytes?: number } = {},
): SessionEventStore {
  const maxEvents = limits.maxEvents ?? MAX_EVENTS;
  const maxBytes = limits.maxBytes ?? MAX_BYTES;
  const events: Stored[] = [];
  /** Events kept per stream: a stream with none left cannot be resumed. */
  const kept = new Map<StreamId, number>();
  let seq = 0;
  let bytes = 0;

  function add(stream: StreamId, message: JSONRPCMessage | undefined): EventId {
    seq += 1;
    const size = message === undefined ? 0 : JSON.stringify(message).length;
    events.push({ stream, seq, message, bytes: size });
    kept.set(stream, (kept.get(stream) ?? 0) + 1);
    bytes += size;
    while (events.length > maxEvents || (bytes > maxBytes && events.length > 1)) {
      const old = events.shift()!;
      bytes -= old.bytes;
      const left = (kept.get(old.stream) ?? 1) - 1;
      if (left === 0) kept.delete(old.stream);
      else kept.set(old.stream, left);
    }
    return `${stream}:${seq}`;
  }

  function parse(id: EventId): { stream: StreamId; seq: number } | undefined {
    const at = id.lastIndexOf(':');
    const n = Number(id.slice(at + 1));
    if (at <= 0 || !Number.isSafeInteger(n) || n < 1) return undefined;
    const stream = id.slice(0, at);
    return kept.has(stream) ? { stream, seq: n } : undefined;
  }

  return {
    prime: (stream) => add(stream, undefined),
    storeEvent: (stream, message) =>
      // The SDK's priming event is an empty object: no message to replay.
      Promise.resolve(add(stream, 'jsonrpc' in message ? message : undefined)),
    getStreamIdForEventId: (id) => Promise.resolve(parse(id)?.stream),
    async replayEventsAfter(lastEventId, { send }) {
      const from = parse(lastEventId);
      if (!from) throw new Error(`unknown event id ${JSON.stringify(lastEventId)}`);
      // A copy: sending may store more events (and drop old ones) meanwhile.
      const due = events.filter((e) => e.stream === from.stream && e.seq > from.seq);
      for (const e of due) {
        if (e.message) await send(`${e.stream}:${e.seq}`, e.message);
      }
      return from.stream;
    },
  };
}
