// A transport wrapper that keeps notifications ahead of the responses that follow them. The
// SDK's Protocol runs a notification's handler on a microtask but a response's handler at once,
// and removes a request's progress handler when its response arrives: a progress notification
// delivered just before its request's response (one read of a stdio pipe or an SSE stream often
// carries both) would find no handler and be dropped. After each notification this wrapper
// holds later messages until the next turn of the event loop, by which time the handler ran.
import type {
  Transport,
  TransportSendOptions,
} from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, MessageExtraInfo } from '@modelcontextprotocol/sdk/types.js';

const isNotification = (m: JSONRPCMessage) => 'method' in m && !('id' in m);

export function orderedTransport(inner: Transport): Transport {
  const queue: [JSONRPCMessage, MessageExtraInfo | undefined][] = [];
  let held = false;
  const outer: Transport = {
    start: () => inner.start(),
    send: (message: JSONRPCMessage, options?: TransportSendOptions) => inner.send(message, options),
    close: () => inner.close(),
    get sessionId() {
      return inner.sessionId;
    },
    setProtocolVersion: (version: string) => inner.setProtocolVersion?.(version),
  };
  const drain = (): void => {
    while (!held && queue.length > 0) {
      const [message, extra] = queue.shift()!;
      outer.onmessage?.(message, extra);
      if (isNotification(message)) {
        held = true;
        setImmediate(() => {
          held = false;
          drain();
        });
      }
    }
  };
  inner.onmessage = (message, extra) => {
    queue.push([message, extra]);
    drain();
  };
  inner.onerror = (err) => outer.onerror?.(err);
  inner.onclose = () => outer.onclose?.();
  return outer;
}
