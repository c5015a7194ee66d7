// `pnpm stack` with its api port taken: one clear sentence naming CG__API__PORT and exit 2,
// before it starts anything, instead of a stack trace from deep inside the api.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..');

describe('pnpm stack with a taken api port', () => {
  it('says the port is taken and how to choose another, and exits 2', async () => {
    const squatter = createServer();
    await new Promise<void>((r) => squatter.listen({ host: '127.0.0.1', port: 0 }, r));
    const { port } = squatter.address() as AddressInfo;
    try {
      const child = spawn(process.execPath, [join(ROOT, 'scripts/stack.ts'), '--once'], {
        cwd: ROOT,
        env: {
          ...process.env,
          CG__API__HOST: '127.0.0.1',
          CG__API__PORT: String(port),
          // Were the check missing, the stack would not reach for servers of its own.
          NATS_URL: 'nats://127.0.0.1:1',
          DATABASE_URL: 'postgres://postgres@127.0.0.1:1/postgres',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      child.stderr.on('data', (b: Buffer) => (out += b.toString()));
      const [code] = (await once(child, 'exit')) as [number | null];
      expect(code).toBe(2);
      expect(out).toContain(`port ${port} on 127.0.0.1 is already in use`);
      expect(out).toContain(`CG__API__PORT=${port + 1} pnpm stack`);
      expect(out).not.toMatch(/^\s+at /m);
    } finally {
      await new Promise((r) => squatter.close(r));
    }
  });
});
