// Network egress: denied by default (a raw socket finds an empty network namespace; a client
// that uses the runtime's proxy is refused and the refusal is reported), and allowed for the
// hosts a session is given.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION, useLocalProvider } from './test-support.ts';

const fixture = useLocalProvider();
let server: Server;
let port: number;
let hits = 0;

beforeAll(async () => {
  server = createServer((_req, res) => {
    hits++;
    res.end('pong from the host');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

const rawConnect = (p: number): string =>
  `import socket\ntry:\n    socket.create_connection(("127.0.0.1", ${p}), 3)\n    print("connected")\nexcept OSError as e:\n    print("refused", e.errno)`;

describe('network', () => {
  it('blocks egress by default and reports what went through the proxy', async () => {
    const sandbox = await fixture.provider.create({ key: SESSION });
    try {
      const before = hits;
      const raw = await sandbox.exec(
        { argv: ['python3', '-c', rawConnect(port)] },
        { timeoutMs: 15_000 },
      );
      expect(raw.stdout.text).toMatch(/^refused \d+/);
      // curl through the runtime's proxy (NO_PROXY covers loopback, so name the proxy use).
      const viaProxy = await sandbox.exec(
        {
          shell: `curl -sS -m 5 --noproxy '' http://127.0.0.1:${port}/; curl -sS -m 5 http://example.com/`,
        },
        { timeoutMs: 15_000 },
      );
      expect(viaProxy.stdout.text).not.toContain('pong');
      expect(viaProxy.stdout.text + viaProxy.stderr.text).toMatch(/blocked|403/i);
      expect(hits).toBe(before);
      expect(viaProxy.denials).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            kind: 'network',
            operation: 'network-outbound',
            target: expect.stringContaining(`127.0.0.1:${port}`),
          }),
          expect.objectContaining({
            kind: 'network',
            target: expect.stringContaining('example.com:80'),
          }),
        ]),
      );
    } finally {
      await sandbox.destroy();
    }
  });

  it('lets a session reach the hosts it is allowed, through the proxy only', async () => {
    const sandbox = await fixture.provider.create({
      key: { ...SESSION, session: 'allowed' },
      network: { allowedDomains: [`127.0.0.1:${port}`] },
    });
    try {
      const before = hits;
      const allowed = await sandbox.exec(
        { shell: `curl -sS -m 5 --noproxy '' http://127.0.0.1:${port}/` },
        { timeoutMs: 15_000 },
      );
      expect(allowed.stdout.text).toBe('pong from the host');
      expect(allowed.denials).toEqual([]);
      expect(hits).toBe(before + 1);
      // Other hosts stay closed, and a raw socket still has no way out.
      const other = await sandbox.exec(
        { shell: `curl -sS -m 5 http://example.com/; python3 -c '${rawConnect(port)}'` },
        { timeoutMs: 15_000 },
      );
      expect(other.stdout.text).toMatch(/refused \d+/);
      expect(other.denials).toContainEqual(
        expect.objectContaining({
          kind: 'network',
          target: expect.stringContaining('example.com:80'),
        }),
      );
    } finally {
      await sandbox.destroy();
    }
  });

  it("does not let one session use another session's allow-list", async () => {
    const open = await fixture.provider.create({
      key: { ...SESSION, session: 'open' },
      network: { allowedDomains: [`127.0.0.1:${port}`] },
    });
    const closed = await fixture.provider.create({ key: { ...SESSION, session: 'closed' } });
    try {
      const [a, b] = await Promise.all([
        open.exec(
          { shell: `sleep 0.3; curl -sS -m 5 --noproxy '' http://127.0.0.1:${port}/` },
          { timeoutMs: 15_000 },
        ),
        closed.exec(
          { shell: `sleep 0.3; curl -sS -m 5 --noproxy '' http://127.0.0.1:${port}/` },
          { timeoutMs: 15_000 },
        ),
      ]);
      expect(a.stdout.text).toBe('pong from the host');
      expect(b.stdout.text).not.toContain('pong');
    } finally {
      await open.destroy();
      await closed.destroy();
    }
  });
});
