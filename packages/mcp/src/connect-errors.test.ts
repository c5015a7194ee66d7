// What a failed MCP connection says: a stdio server that dies at start is shown by the first
// lines of its stderr (where Node says "Cannot find module"), not a tail cut mid-word; an HTTP
// server that cannot be reached is shown with the cause (ECONNREFUSED, ENOTFOUND, TLS), not only
// "fetch failed". Real servers: a stdio command in a local sandbox, real sockets.
import { createServer, type Server } from 'node:https';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createLocalSandboxProvider,
  type LocalSandboxProvider,
  type Sandbox,
} from '@toolmesh/sandbox';
import { freePort } from '@toolmesh/testing';
import { connectMcp } from './connect.ts';
import { McpClientError } from './errors.ts';

let root: string;
let provider: LocalSandboxProvider;
let sandbox: Sandbox;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'toolmesh-mcp-errors-'));
  provider = await createLocalSandboxProvider({ rootDir: root });
  sandbox = await provider.create({ key: { project: 'p', agent: '-', session: 'mcp-errors' } });
}, 120_000);
afterAll(async () => {
  await sandbox?.destroy();
  await provider?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

async function failure(p: Promise<unknown>): Promise<McpClientError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(McpClientError);
  return err as McpClientError;
}

describe('a failed MCP connection says why', () => {
  it('a stdio server that cannot start: the first lines of its stderr', async () => {
    const err = await failure(
      connectMcp(
        {
          transport: 'stdio',
          sandbox,
          command: 'node',
          args: ['/opt/servers/files.js'],
        },
        { timeoutMs: 20_000 },
      ),
    );
    expect(err.message).toContain("Error: Cannot find module '/opt/servers/files.js'");
    // Whole lines: none begins mid-word, as a tail of the last 500 characters did.
    const stderr = /\(stderr: (.*)\)$/s.exec(err.message)?.[1] ?? '';
    expect(stderr.startsWith('node:internal')).toBe(true);
  }, 60_000);

  it('an HTTP server that refuses: ECONNREFUSED', async () => {
    // A port nothing listens on (fetch refuses to try "bad ports" such as 1 at all).
    const port = await freePort();
    const err = await failure(
      connectMcp({ transport: 'http', url: `http://127.0.0.1:${port}/mcp` }, { timeoutMs: 10_000 }),
    );
    expect(err.message).toMatch(/ECONNREFUSED/);
  });

  it('an unknown host: ENOTFOUND (or the resolver failing, EAI_AGAIN)', async () => {
    const err = await failure(
      connectMcp(
        { transport: 'http', url: 'http://no-such-host.invalid/mcp' },
        { timeoutMs: 10_000 },
      ),
    );
    expect(err.message).toMatch(/ENOTFOUND|EAI_AGAIN/);
  });

  it('a TLS failure: what the certificate check said', async () => {
    // A TLS server whose certificate nobody trusts: the handshake fails.
    const server: Server = createServer({}, (_req, res) => res.end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as { port: number };
      const err = await failure(
        connectMcp(
          { transport: 'http', url: `https://127.0.0.1:${port}/mcp` },
          { timeoutMs: 10_000 },
        ),
      );
      expect(err.message).toMatch(
        /fetch failed: .*(SSL|TLS|certificate|handshake|socket disconnected)/i,
      );
    } finally {
      server.close();
    }
  });
});
