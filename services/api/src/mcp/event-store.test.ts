import { describe, expect, it } from 'vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { createSessionEventStore } from './event-store.ts';

const note = (n: number): JSONRPCMessage => ({
  jsonrpc: '2.0',
  method: 'notifications/progress',
  params: { progressToken: 't', progress: n },
});

async function replay(store: ReturnType<typeof createSessionEventStore>, id: string) {
  const got: [string, JSONRPCMessage][] = [];
  const stream = await store.replayEventsAfter(id, {
    send: (eventId, message) => {
      got.push([eventId, message]);
      return Promise.resolve();
    },
  });
  return { stream, got };
}

describe('the session event store', () => {
  it('replays what a stream sent after an id, never its priming event or another stream', async () => {
    const store = createSessionEventStore();
    const primed = await store.storeEvent('s1', {} as JSONRPCMessage);
    const first = await store.storeEvent('s1', note(1));
    await store.storeEvent('s2', note(99));
    const second = await store.storeEvent('s1', note(2));
    expect(await store.getStreamIdForEventId?.(primed)).toBe('s1');
    expect(await replay(store, primed)).toEqual({
      stream: 's1',
      got: [
        [first, note(1)],
        [second, note(2)],
      ],
    });
    expect((await replay(store, first)).got).toEqual([[second, note(2)]]);
    const get = store.prime('_GET_stream');
    expect(await replay(store, get)).toEqual({ stream: '_GET_stream', got: [] });
  });

  it('keeps the newest events within its bounds and refuses a stream with nothing left', async () => {
    const store = createSessionEventStore({ maxEvents: 3 });
    const old = await store.storeEvent('a', note(1));
    for (let n = 2; n <= 4; n++) await store.storeEvent('b', note(n));
    expect(await store.getStreamIdForEventId?.(old)).toBeUndefined();
    await expect(replay(store, old)).rejects.toThrow(/unknown event id/);
    const big = createSessionEventStore({ maxBytes: 100 });
    const id = await big.storeEvent('c', note(1));
    await big.storeEvent('c', { jsonrpc: '2.0', method: 'x', params: { pad: 'y'.repeat(500) } });
    // The oversized newest event is kept; the older one went to make room.
    expect((await replay(big, id)).got).toHaveLength(1);
    expect(await big.getStreamIdForEventId?.('c:1')).toBe('c');
    expect(await big.getStreamIdForEventId?.('nonsense')).toBeUndefined();
    expect(await big.getStreamIdForEventId?.('c:x')).toBeUndefined();
  });
});
