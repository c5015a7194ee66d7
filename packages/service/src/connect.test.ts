// A service's first NATS connection survives one handshake that misses its window (a server that
// accepts the socket and says nothing in time, as a host starting everything at once can), and
// still fails at once on a refused port.
import { createServer, connect as tcpConnect, type Socket } from 'node:net';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { loadConfig } from '@toolmesh/config';
import { ServiceUser } from '@toolmesh/nats-auth';
import { freePort, useNats } from '@toolmesh/testing';
import { connectNatsFromConfig } from './connect.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A port whose first connection is accepted and left silent; later ones reach `target`. */
async function silentOnce(target: URL): Promise<{ url: string; accepted: () => number }> {
  let accepted = 0;
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    accepted++;
    if (accepted === 1) return; // says nothing: the client's handshake times out
    const upstream = tcpConnect(Number(target.port), target.hostname);
    sockets.push(upstream);
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  closers.push(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `nats://127.0.0.1:${port}`, accepted: () => accepted };
}

function capture() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as never);
      done();
    },
  });
  return { lines, logger: pino({ level: 'info' }, sink) };
}

it('tries a first connection that timed out again and connects', async () => {
  const nats = await useNats();
  const proxy = await silentOnce(new URL(nats.url.split(',')[0]!));
  const config = loadConfig({
    env: {
      ...nats.env(ServiceUser.tools),
      CG__NATS__URL: proxy.url,
      CG__NATS__CONNECT_TIMEOUT_MS: '500',
    },
    source: '',
  });
  const { lines, logger } = capture();
  const nc = await connectNatsFromConfig(config, 'connect-test', logger);
  closers.push(() => nc.close());
  await nc.flush();
  expect(proxy.accepted()).toBeGreaterThanOrEqual(2);
  expect(
    lines.find(
      (l) => l['msg'] === 'NATS did not answer the first connection in time; trying again',
    ),
  ).toMatchObject({ attempt: 1, of: 3, timeout_ms: 500 });
});

it('fails at once on a refused port', async () => {
  const nats = await useNats();
  const port = await freePort();
  const config = loadConfig({
    env: { ...nats.env(ServiceUser.tools), CG__NATS__URL: `nats://127.0.0.1:${port}` },
    source: '',
  });
  const { lines, logger } = capture();
  await expect(connectNatsFromConfig(config, 'connect-test', logger)).rejects.toThrow(
    /cannot connect to NATS/,
  );
  expect(lines.filter((l) => String(l['msg']).includes('trying again'))).toEqual([]);
});
