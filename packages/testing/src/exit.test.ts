// The local servers must not outlive the process that started them, however it ends: a test
// worker that exits, or `pnpm stack` stopped with Ctrl-C or a SIGTERM.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';

const script = `
const { startLocalNats } = await import(${JSON.stringify(new URL('./local-nats.ts', import.meta.url).href)});
const { startLocalPostgres } = await import(${JSON.stringify(new URL('./local-postgres.ts', import.meta.url).href)});
const nats = await startLocalNats();
const pg = await startLocalPostgres();
process.stdout.write(JSON.stringify({ nats: [nats.port, nats.dir], pg: [pg.port, pg.dir] }) + '\\n');
if (process.argv[1] === 'exit') process.exit(0);
setInterval(() => {}, 1000); // stay up until signalled
`;

interface Started {
  nats: [number, string];
  pg: [number, string];
}

function startChild(mode: 'exit' | 'wait'): {
  child: ChildProcess;
  started: Promise<Started>;
  exited: Promise<[number | null, NodeJS.Signals | null]>;
} {
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, mode], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr?.on('data', (c: Buffer) => (err += c.toString()));
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const started = new Promise<Started>((resolve, reject) => {
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\n')) resolve(JSON.parse(out) as Started);
    });
    void exited.then(() => reject(new Error(`child ended before starting its servers:\n${err}`)));
  });
  return { child, started, exited };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function expectGone(started: Started): Promise<void> {
  expect(await accepts(started.nats[0])).toBe(false);
  expect(await accepts(started.pg[0])).toBe(false);
  expect(existsSync(started.nats[1])).toBe(false);
  expect(existsSync(started.pg[1])).toBe(false);
}

describe('local servers at process exit', () => {
  it('are stopped and their folders removed when the process exits', async () => {
    const { started, exited } = startChild('exit');
    const servers = await started;
    const [code] = await exited;
    expect(code).toBe(0);
    await expectGone(servers);
  });

  it('are stopped and their folders removed when the process gets SIGTERM', async () => {
    const { child, started, exited } = startChild('wait');
    const servers = await started;
    expect(await accepts(servers.nats[0])).toBe(true);
    expect(await accepts(servers.pg[0])).toBe(true);
    child.kill('SIGTERM');
    const [, signal] = await exited;
    // Died of the signal, as it would have without our handler.
    expect(signal).toBe('SIGTERM');
    await expectGone(servers);
  });
});
