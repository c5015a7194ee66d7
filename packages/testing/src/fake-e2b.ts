// A fake E2B server for tests: the REST API the `e2b` SDK calls and each sandbox's envd (process
// and file system over the Connect protocol, plus `/files`), on one plain-HTTP port, running
// commands for real in a temporary folder per sandbox. No E2B is reachable from here, and a
// mocked SDK would prove nothing: the real SDK talks to this server.
//
// Point the SDK at it with `apiUrl: fake.url` (REST) and `sandboxUrl: fake.url` (envd; the SDK
// then sends every envd request there with an `E2b-Sandbox-Id` header instead of dialing
// `https://49983-<id>.<domain>`). Keys are checked: `X-API-Key` on REST, the sandbox's envd
// access token in `X-Access-Token` on envd.
//
// REST routes (both the v2 paths this SDK uses and the older ones self-hosted servers have):
//   POST   /v2/sandboxes, /sandboxes                create (201)
//   GET    /v2/sandboxes, /sandboxes                list
//   GET    /sandboxes/:id                           info, with envdAccessToken and domain
//   POST   /v2/sandboxes/:id/connect, /sandboxes/:id/connect   connect, resuming a paused one
//   POST   /sandboxes/:id/resume                    resume (201; 409 when running)
//   POST   /sandboxes/:id/pause                     pause (204; 409 when paused)
//   POST   /sandboxes/:id/timeout                   set the timeout (204)
//   DELETE /sandboxes/:id                           kill (204)
// Switches: `connectRoute: false` answers the connect routes with a router's plain 404, as an
// older self-hosted server does; `keepPaused: true` pauses a sandbox when its timeout passes
// instead of killing it; `pause(id)` and `vanish(id)` do either at once.
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { downloadFile, filesystemRpc, uploadFiles } from './fake-e2b-files.ts';
import { processRpc } from './fake-e2b-process.ts';
import { disposeSandbox, hostPath, makeSandbox, signalGroup } from './fake-e2b-sandbox.ts';
import type { FakeSandbox, SandboxState } from './fake-e2b-sandbox.ts';
import {
  ConnectError,
  decodeRequest,
  HttpError,
  isStreamingRequest,
  readBody,
  sendHttpError,
  sendJson,
  sendUnaryError,
} from './fake-e2b-wire.ts';
import { createSandboxApi } from './fake-e2b-api.ts';

export interface FakeE2bOptions {
  /** Defaults to a free port on 127.0.0.1. */
  readonly port?: number;
  /** The key `X-API-Key` must carry. Default `e2b_test_key`. */
  readonly apiKey?: string;
  /** False: the connect routes answer 404, like a self-hosted server older than `/connect`. */
  readonly connectRoute?: boolean;
  /** True: a sandbox whose timeout passes is paused, not killed. */
  readonly keepPaused?: boolean;
  /** The sandbox domain the API reports; default none (the client keeps its own). */
  readonly domain?: string;
  /** envd version reported for new sandboxes. */
  readonly envdVersion?: string;
}

export interface FakeE2bRequest {
  readonly method: string;
  readonly path: string;
  /** The sandbox an envd request was for (`E2b-Sandbox-Id`) or the `:id` of a REST route. */
  readonly sandboxId: string | undefined;
  /** `process.Process/Start` etc. for Connect calls. */
  readonly rpc: string | undefined;
  /** The command line of a `process.Process/Start`. */
  command: readonly string[] | undefined;
  /** 0 when the client went away before an answer. */
  status: number;
}

export interface FakeE2bSandboxView {
  readonly id: string;
  readonly state: SandboxState;
  readonly templateId: string;
  readonly metadata: Readonly<Record<string, string>>;
  /** The egress rules the sandbox was created with, as sent (not enforced by the fake). */
  readonly network: unknown;
  /** Host folder that stands for the sandbox's `/`. */
  readonly root: string;
  /** Pids (host) of the processes still running in it. */
  readonly pids: readonly number[];
}

export interface FakeE2b {
  /** `http://127.0.0.1:<port>`: both `apiUrl` and `sandboxUrl` of the SDK. */
  readonly url: string;
  readonly port: number;
  readonly apiKey: string;
  /** Every request answered (or dropped) so far, oldest first. */
  requests(): FakeE2bRequest[];
  /** The `process.Process/Start` calls whose command line contains `text`. */
  starts(text: string): FakeE2bRequest[];
  sandboxes(): FakeE2bSandboxView[];
  /** Host path of a sandbox path (`/home/user/x`). */
  hostPath(sandboxId: string, path: string): string;
  /** Pauses a sandbox (its processes are stopped, envd refuses requests) until resumed. */
  pause(sandboxId: string): void;
  /** Deletes a sandbox at once, as if E2B had reaped it: every route answers 404 for it. */
  vanish(sandboxId: string): Promise<void>;
  setConnectRoute(enabled: boolean): void;
  stop(): Promise<void>;
}

const ENVD_RPC = /^\/(process\.Process|filesystem\.Filesystem)\/([A-Za-z]+)$/;

export async function startFakeE2b(options: FakeE2bOptions = {}): Promise<FakeE2b> {
  const apiKey = options.apiKey ?? 'e2b_test_key';
  const sandboxes = new Map<string, FakeSandbox>();
  const log: FakeE2bRequest[] = [];
  const settings = {
    connectRoute: options.connectRoute ?? true,
    keepPaused: options.keepPaused ?? false,
  };

  const pause = (sandbox: FakeSandbox): void => {
    sandbox.state = 'paused';
    if (sandbox.timer) clearTimeout(sandbox.timer);
    for (const proc of sandbox.processes.values()) signalGroup(proc, 'SIGSTOP');
  };
  const remove = async (sandbox: FakeSandbox): Promise<void> => {
    sandboxes.delete(sandbox.id);
    await disposeSandbox(sandbox);
  };
  const api = createSandboxApi({
    sandboxes,
    settings,
    domain: options.domain,
    envdVersion: options.envdVersion ?? '0.5.7',
    makeSandbox,
    pause,
    remove,
  });

  async function envd(
    req: IncomingMessage,
    res: ServerResponse,
    target: URL,
    entry: FakeE2bRequest,
  ): Promise<void> {
    const body = await readBody(req);
    const path = target.pathname;
    const m = ENVD_RPC.exec(path);
    const streaming = isStreamingRequest(req);
    // Logged before any check, so a test sees every Start that was attempted, even refused ones.
    if (m?.[1] === 'process.Process' && m[2] === 'Start') {
      const start = decodeRequest(body, streaming) as {
        process?: { cmd?: string; args?: string[] };
      };
      entry.command = [start.process?.cmd ?? '', ...(start.process?.args ?? [])];
    }
    const sandbox = sandboxes.get(entry.sandboxId ?? '');
    // What E2B's edge proxy answers for a sandbox it cannot reach.
    if (!sandbox) throw new HttpError(502, `sandbox ${entry.sandboxId ?? ''} not found`);
    if (req.headers['x-access-token'] !== sandbox.envdAccessToken) {
      throw new HttpError(401, 'invalid envd access token');
    }
    if (sandbox.state === 'paused') throw new HttpError(502, `sandbox ${sandbox.id} is paused`);
    if (path === '/health') {
      res.writeHead(204);
      res.end();
      return;
    }
    if (path === '/files' && req.method === 'GET') {
      return downloadFile(sandbox, target.searchParams, res);
    }
    if (path === '/files' && req.method === 'POST') {
      return uploadFiles(sandbox, req, body, target.searchParams, res);
    }
    if (!m || req.method !== 'POST') throw new HttpError(404, `no envd route ${path}`, true);
    try {
      const message = decodeRequest(body, streaming);
      if (m[1] === 'process.Process') {
        await processRpc(sandbox, { method: m[2]!, message, req, res });
      } else {
        await filesystemRpc(sandbox, m[2]!, message, res);
      }
    } catch (err) {
      const error =
        err instanceof ConnectError ? err : new ConnectError('internal', (err as Error).message);
      if (streaming) {
        // A stream's status travels in its end envelope, after a 200.
        res.writeHead(200, { 'Content-Type': 'application/connect+json' });
        const json = Buffer.from(
          JSON.stringify({ error: { code: error.code, message: error.message } }),
        );
        const head = Buffer.alloc(5);
        head.writeUInt8(0x02, 0);
        head.writeUInt32BE(json.length, 1);
        res.end(Buffer.concat([head, json]));
      } else {
        sendUnaryError(res, error);
      }
    }
  }

  const server = createServer((req, res) => {
    const target = new URL(req.url ?? '/', 'http://fake');
    const header = req.headers['e2b-sandbox-id'];
    const rpc = ENVD_RPC.exec(target.pathname);
    const isEnvd =
      header !== undefined || rpc !== null || ['/files', '/health'].includes(target.pathname);
    const entry: FakeE2bRequest = {
      method: req.method ?? 'GET',
      path: target.pathname,
      sandboxId: isEnvd
        ? Array.isArray(header)
          ? header[0]
          : header
        : api.sandboxIdOf(target.pathname),
      rpc: rpc ? `${rpc[1]}/${rpc[2]}` : undefined,
      command: undefined,
      status: 0,
    };
    log.push(entry);
    res.on('finish', () => {
      entry.status = res.statusCode;
    });
    const handle = async (): Promise<void> => {
      if (isEnvd) return envd(req, res, target, entry);
      if (req.headers['x-api-key'] !== apiKey) throw new HttpError(401, 'Invalid API key');
      const body = await readBody(req);
      return api.route(req.method ?? 'GET', target, body, res);
    };
    handle().catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof HttpError) return sendHttpError(res, err);
      sendJson(res, 500, { code: 500, message: (err as Error).message });
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address !== 'object')
    throw new Error('the fake E2B server has no port');
  const url = `http://127.0.0.1:${address.port}`;

  const get = (id: string): FakeSandbox => {
    const sandbox = sandboxes.get(id);
    if (!sandbox) throw new Error(`the fake E2B server has no sandbox ${id}`);
    return sandbox;
  };

  return {
    url,
    port: address.port,
    apiKey,
    requests: () => [...log],
    starts: (text) =>
      log.filter(
        (r) => r.rpc === 'process.Process/Start' && (r.command ?? []).some((a) => a.includes(text)),
      ),
    sandboxes: () =>
      [...sandboxes.values()].map((s) => ({
        id: s.id,
        state: s.state,
        templateId: s.templateId,
        metadata: s.metadata,
        network: s.network,
        root: s.root,
        pids: [...s.processes.keys()],
      })),
    hostPath: (id, path) => hostPath(get(id), path),
    pause: (id) => pause(get(id)),
    vanish: async (id) => remove(get(id)),
    setConnectRoute: (enabled) => {
      settings.connectRoute = enabled;
    },
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all([...sandboxes.values()].map(remove));
    },
  };
}
