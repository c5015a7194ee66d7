// Free TCP ports for servers started by tests and by `pnpm stack`.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Binds host:port and closes it again; false when the port is taken. */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '127.0.0.1', exclusive: true }, () =>
      server.close(() => resolve(true)),
    );
  });
}

/**
 * The kernel's range of ephemeral ports (Linux; undefined elsewhere): the local ports of
 * outgoing connections and of `listen(0)` come from it.
 */
function ephemeralRange(): [number, number] | undefined {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    return low !== undefined && high !== undefined && low > 0 && high >= low
      ? [low, high]
      : undefined;
  } catch {
    return undefined;
  }
}

/** Any port the OS hands out for `listen(0)`. */
function anyPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('the OS gave no port'));
      });
    });
  });
}

/** Ports below the ephemeral range are picked from here. */
const LOWEST = 10_000;

/**
 * A TCP port on 127.0.0.1 that was free a moment ago. Another process may take it before the
 * caller binds it, so the local servers retry with a new port when the bind fails. It is picked
 * below the kernel's ephemeral range when there is room: a port from that range can be taken in
 * the meantime by any outgoing connection on the machine (a busy test run opens thousands),
 * one below it only by another server choosing the same number.
 */
export async function freePort(): Promise<number> {
  const range = ephemeralRange();
  if (range && range[0] - LOWEST >= 1_000) {
    for (let attempt = 0; attempt < 20; attempt++) {
      const port = LOWEST + Math.floor(Math.random() * (range[0] - LOWEST));
      if (await bindable(port)) return port;
    }
  }
  return anyPort();
}
