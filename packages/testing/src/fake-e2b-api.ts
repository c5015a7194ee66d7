// The REST API of the fake E2B server (see fake-e2b.ts for the route list): sandboxes as E2B's
// OpenAPI document shapes them (`sandboxID`, `envdAccessToken`, `domain`, `state`, ...), with a
// timeout that kills (or, with keepPaused / autoPause, pauses) a sandbox when it passes.
import type { ServerResponse } from 'node:http';
import { signalGroup } from './fake-e2b-sandbox.ts';
import type { FakeSandbox, NewSandbox } from './fake-e2b-sandbox.ts';
import { HttpError, sendJson } from './fake-e2b-wire.ts';

export interface ApiDeps {
  readonly sandboxes: Map<string, FakeSandbox>;
  readonly settings: { connectRoute: boolean; keepPaused: boolean };
  readonly domain: string | undefined;
  readonly envdVersion: string;
  makeSandbox(spec: NewSandbox): Promise<FakeSandbox>;
  pause(sandbox: FakeSandbox): void;
  remove(sandbox: FakeSandbox): Promise<void>;
}

export interface SandboxApi {
  /** The `:id` of a sandbox route, for the request log. */
  sandboxIdOf(path: string): string | undefined;
  route(method: string, target: URL, body: Buffer, res: ServerResponse): Promise<void>;
}

/** E2B's default when a create request names no timeout. */
const DEFAULT_TIMEOUT_SEC = 300;
const SANDBOX = /^(?:\/v2)?\/sandboxes\/([^/]+)(?:\/([a-z]+))?$/;

export function createSandboxApi(deps: ApiDeps): SandboxApi {
  const { sandboxes, settings } = deps;

  const arm = (sandbox: FakeSandbox, seconds: number): void => {
    if (sandbox.timer) clearTimeout(sandbox.timer);
    sandbox.endAt = new Date(Date.now() + seconds * 1000);
    sandbox.timer = setTimeout(() => {
      if (sandbox.autoPause || settings.keepPaused) deps.pause(sandbox);
      else void deps.remove(sandbox);
    }, seconds * 1000);
    sandbox.timer.unref();
  };

  const resume = (sandbox: FakeSandbox, seconds: number | undefined): void => {
    sandbox.state = 'running';
    for (const proc of sandbox.processes.values()) signalGroup(proc, 'SIGCONT');
    arm(sandbox, seconds ?? DEFAULT_TIMEOUT_SEC);
  };

  // What create, connect and resume answer: how to reach the sandbox's envd.
  const connection = (sandbox: FakeSandbox) => ({
    sandboxID: sandbox.id,
    templateID: sandbox.templateId,
    clientID: 'fake',
    envdVersion: deps.envdVersion,
    envdAccessToken: sandbox.envdAccessToken,
    domain: deps.domain ?? null,
  });

  const listed = (sandbox: FakeSandbox) => ({
    ...connection(sandbox),
    startedAt: sandbox.startedAt.toISOString(),
    endAt: sandbox.endAt.toISOString(),
    state: sandbox.state,
    cpuCount: 2,
    memoryMB: 512,
    diskSizeMB: 1024,
    metadata: sandbox.metadata,
  });

  const find = (id: string): FakeSandbox => {
    const sandbox = sandboxes.get(id);
    if (!sandbox)
      throw new HttpError(404, `sandbox "${id}" doesn't exist or you don't have access to it`);
    return sandbox;
  };

  const json = (body: Buffer): Record<string, unknown> =>
    body.length === 0 ? {} : (JSON.parse(body.toString('utf8')) as Record<string, unknown>);

  return {
    sandboxIdOf(path) {
      return SANDBOX.exec(path)?.[1];
    },

    async route(method, target, body, res) {
      const path = target.pathname;
      if ((path === '/v2/sandboxes' || path === '/sandboxes') && method === 'POST') {
        const request = json(body);
        const sandbox = await deps.makeSandbox({
          templateId: typeof request.templateID === 'string' ? request.templateID : 'base',
          metadata: (request.metadata as Record<string, string> | undefined) ?? {},
          envVars: (request.envVars as Record<string, string> | undefined) ?? {},
          network: request.network,
          autoPause: request.autoPause === true,
        });
        sandboxes.set(sandbox.id, sandbox);
        arm(sandbox, typeof request.timeout === 'number' ? request.timeout : DEFAULT_TIMEOUT_SEC);
        return sendJson(res, 201, connection(sandbox));
      }
      if ((path === '/v2/sandboxes' || path === '/sandboxes') && method === 'GET') {
        const states = target.searchParams.get('state')?.split(',') ?? ['running', 'paused'];
        return sendJson(
          res,
          200,
          [...sandboxes.values()].filter((s) => states.includes(s.state)).map(listed),
        );
      }
      const m = SANDBOX.exec(path);
      if (!m) throw new HttpError(404, '404 page not found', true);
      const [, id = '', action] = m;
      const v2 = path.startsWith('/v2/');

      if (action === 'connect' && method === 'POST') {
        if (!settings.connectRoute) throw new HttpError(404, '404 page not found', true);
        const sandbox = find(id);
        const { timeout } = json(body) as { timeout?: number };
        if (sandbox.state === 'paused') {
          resume(sandbox, timeout);
          return sendJson(res, 201, connection(sandbox));
        }
        if (timeout !== undefined) arm(sandbox, timeout);
        return sendJson(res, 200, connection(sandbox));
      }
      if (v2) throw new HttpError(404, '404 page not found', true);
      if (action === undefined && method === 'GET') return sendJson(res, 200, listed(find(id)));
      if (action === undefined && method === 'DELETE') {
        await deps.remove(find(id));
        res.writeHead(204);
        res.end();
        return;
      }
      if (action === 'resume' && method === 'POST') {
        const sandbox = find(id);
        if (sandbox.state !== 'paused')
          throw new HttpError(409, `sandbox ${id} is already running`);
        resume(sandbox, (json(body) as { timeout?: number }).timeout);
        return sendJson(res, 201, connection(sandbox));
      }
      if (action === 'pause' && method === 'POST') {
        const sandbox = find(id);
        if (sandbox.state === 'paused') throw new HttpError(409, `sandbox ${id} is already paused`);
        deps.pause(sandbox);
        res.writeHead(204);
        res.end();
        return;
      }
      if (action === 'timeout' && method === 'POST') {
        const { timeout } = json(body) as { timeout?: number };
        arm(find(id), timeout ?? DEFAULT_TIMEOUT_SEC);
        res.writeHead(204);
        res.end();
        return;
      }
      throw new HttpError(404, '404 page not found', true);
    },
  };
}
