// `pnpm stack` and its ports. A taken port is one clear sentence naming the key that moves it and
// exit 2, before the stack starts anything, instead of a stack trace from deep inside a service.
// The only fixed port is the api's: a second stack, the same command with another CG__API__PORT,
// comes up beside a running one (its health ports free ones, its servers its own).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from '@toolmesh/testing';

const ROOT = join(import.meta.dirname, '..');

/** `pnpm stack` (the script itself) with these variables; its output collected as it comes. */
function stack(env: Record<string, string>, args: string[] = []) {
  const child = spawn(process.execPath, [join(ROOT, 'scripts/stack.ts'), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const exit = once(child, 'exit').then(([code]) => code as number | null);
  return { child, exit, out: () => out };
}

async function squat(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((r) => server.listen({ host: '127.0.0.1', port: 0 }, r));
  return { server, port: (server.address() as AddressInfo).port };
}

// Were the checks missing, the stack would not reach for servers of its own.
const DEAD_SERVERS = {
  NATS_URL: 'nats://127.0.0.1:1',
  DATABASE_URL: 'postgres://postgres@127.0.0.1:1/postgres',
};

describe('pnpm stack with a taken port', () => {
  it('says the api port is taken and how to choose another, and exits 2', async () => {
    const { server, port } = await squat();
    try {
      const run = stack(
        {
          ...DEAD_SERVERS,
          CG__API__HOST: '127.0.0.1',
          CG__API__PORT: String(port),
        },
        ['--once'],
      );
      expect(await run.exit).toBe(2);
      expect(run.out()).toContain(`port ${port} on 127.0.0.1 is already in use`);
      expect(run.out()).toContain(`CG__API__PORT=${port + 1} pnpm stack`);
      expect(run.out()).not.toMatch(/^\s+at /m);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  it("names the key of another service's port when that one is taken", async () => {
    const { server, port } = await squat();
    try {
      const run = stack(
        {
          ...DEAD_SERVERS,
          CG__API__PORT: String(await freePort()),
          CG__TOOLS__HEALTH_PORT: String(port),
        },
        ['--once'],
      );
      expect(await run.exit).toBe(2);
      expect(run.out()).toContain(
        `the tools service cannot serve its health checks: port ${port} on 127.0.0.1 is already in use`,
      );
      expect(run.out()).toContain(`CG__TOOLS__HEALTH_PORT=${port + 1} pnpm stack`);
      expect(run.out()).toContain('`health_port` under [tools] in config.toml');
      expect(run.out()).not.toMatch(/^\s+at /m);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});

describe('two stacks side by side', () => {
  it(
    'the same command with another CG__API__PORT comes up beside a running stack and runs the demo',
    { timeout: 600_000 },
    async () => {
      // One folder for both, as one checkout's .data would be; searchable by the postgres and
      // sandbox users when this runs as root.
      const data = await mkdtemp(join(tmpdir(), 'toolmesh-stacks-'));
      await chmod(data, 0o755);
      const common = { STACK_DATA_DIR: data, CG__LLM__API_KEY: '' };
      const [portA, portB] = [await freePort(), await freePort()];
      let first: ReturnType<typeof stack> | undefined;
      try {
        first = stack({ ...common, CG__API__PORT: String(portA) });
        const up = await Promise.race([
          new Promise<boolean>((resolve) => {
            const timer = setInterval(() => {
              if (first!.out().includes('[stack] running; press Ctrl-C to stop')) {
                clearInterval(timer);
                resolve(true);
              }
            }, 200);
            void first!.exit.then(() => clearInterval(timer));
          }),
          first.exit.then(() => false),
        ]);
        expect(up, first.out().slice(-6_000)).toBe(true);

        const second = stack({ ...common, CG__API__PORT: String(portB) }, ['--once']);
        const code = await second.exit;
        expect(code, second.out().slice(-6_000)).toBe(0);
        expect(second.out()).toContain(
          `this one keeps its servers and files in ${join(data, 'stacks', `api-${portB}`)}`,
        );
        expect(second.out()).toContain('[stack] demo succeeded');
        // The first one is still there, and stops cleanly.
        expect(first.child.exitCode).toBeNull();
        first.child.kill('SIGINT');
        expect(await first.exit, first.out().slice(-3_000)).toBe(0);
      } finally {
        if (first && first.child.exitCode === null) {
          first.child.kill('SIGKILL');
          await first.exit;
        }
        await rm(data, { recursive: true, force: true });
      }
    },
  );
});
