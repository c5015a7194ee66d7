// Free TCP ports for servers started by tests and by `pnpm stack`.
import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free a moment ago. Another process may take it before the
 * caller binds it, so the local servers retry with a new port when the bind fails.
 */
export function freePort(): Promise<number> {
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
