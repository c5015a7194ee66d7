// Authentication: an admin key from the configuration, or a project API key (only its hash is
// stored). A project key reaches its own project only: anything of another project answers 404,
// exactly as if it did not exist. A project key has a role: `admin` may do everything in its
// project; `caller` only what routes opened with requireCaller allow (calling tools, starting
// tasks, reading and canceling what it started), and gets 403 `forbidden` elsewhere. Failed
// authentications are rate limited per client address (auth-limit.ts; IPv6 by /64): the address
// is the peer of the TCP connection (no proxy headers are trusted), so clients behind one proxy
// share a budget. Past it, the address is refused everything but a valid project key: tenants
// behind one NAT or proxy are not locked out by whoever fails beside them. That leaves guessing a
// project key unthrottled there, which is safe only because a project key is 256 random bits
// the server made; the admin key, the one secret a person chooses, stays behind the limit.
// Authenticated requests are rate limited per key (api-rate-limit.ts) and hold at most
// [api] max_inflight_requests_per_key open at once (inflight.ts). A verified key is kept for a moment
// (key-cache.ts); revoking it drops it on every instance.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { ID_PATTERN } from '@toolmesh/protocol';
import { type CallsStore, KeyRole, PROJECT_KEY_PATTERN, type RegistryStore } from '@toolmesh/store';
import type { ApiConfig } from '@toolmesh/config';
import { createApiRateLimit } from './api-rate-limit.ts';
import { clientKey, createAuthLimiter, type AuthLimiter } from './auth-limit.ts';
import { ApiError, notFound } from './errors.ts';
import type { KeyCache } from './key-cache.ts';

export type Principal =
  { kind: 'admin' } | { kind: 'project'; projectId: string; keyId: string; role: KeyRole };

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

const digest = (s: string) => createHash('sha256').update(s).digest();

type AuthConfig = Pick<
  ApiConfig,
  | 'admin_key'
  | 'auth_failure_limit'
  | 'auth_failure_window_sec'
  | 'auth_failure_max_clients'
  | 'rate_limit_per_minute'
  | 'admin_rate_limit_per_minute'
>;

const tooMany = (retryAfterSec: number) =>
  new ApiError(
    'rate_limited',
    `too many failed authentications from this address; retry in ${retryAfterSec} s`,
    { retry_after_sec: retryAfterSec },
  );

/** Without a cache: every request reads its key, and a revocation has nothing to drop. */
const uncached = (store: CallsStore & RegistryStore): Pick<KeyCache, 'resolve' | 'revoked'> => ({
  resolve: (key) => store.projects.resolveKey(key),
  revoked: async () => {},
});

export function createAuth(
  store: CallsStore & RegistryStore,
  config: AuthConfig,
  keys: Pick<KeyCache, 'resolve' | 'revoked'> = uncached(store),
  limiter: AuthLimiter = createAuthLimiter({
    limit: config.auth_failure_limit,
    windowMs: config.auth_failure_window_sec * 1000,
    maxClients: config.auth_failure_max_clients,
  }),
) {
  const admin = config.admin_key ? digest(config.admin_key) : undefined;
  const rateLimit = createApiRateLimit(store, config);

  function failed(req: FastifyRequest, message: string): ApiError {
    const wait = limiter.fail(clientKey(req.ip));
    if (wait !== undefined) {
      req.log.warn({ client: req.ip }, 'failed authentications over the limit; refusing');
    }
    return new ApiError('unauthorized', message);
  }

  /** Past the address's failure limit: a valid project key still passes, nothing else. */
  async function whileBlocked(key: string | undefined, wait: number): Promise<Principal> {
    // Not a project key's shape: no lookup (it could only be a guess at the admin key).
    if (!key || !PROJECT_KEY_PATTERN.test(key)) throw tooMany(wait);
    const found = await keys.resolve(key);
    // A wrong key gets the same answer as before, and is not counted again (its window is
    // over the limit already; counting would only log every guess).
    if (!found) throw tooMany(wait);
    return { kind: 'project', ...found };
  }

  async function authenticate(req: FastifyRequest): Promise<Principal> {
    const header = req.headers.authorization;
    const key = header?.startsWith('Bearer ') ? header.slice(7).trim() : undefined;
    const blocked = limiter.blockedFor(clientKey(req.ip));
    let principal: Principal;
    if (blocked !== undefined) principal = await whileBlocked(key, blocked);
    else if (!key) throw failed(req, 'missing API key: send Authorization: Bearer <key>');
    else if (admin && timingSafeEqual(digest(key), admin)) principal = { kind: 'admin' };
    else {
      const found = await keys.resolve(key);
      if (!found) throw failed(req, 'unknown or revoked API key');
      principal = { kind: 'project', ...found };
    }
    await rateLimit(principal);
    return principal;
  }

  /** The project named in the path, visible to the admin and to that project's own keys. */
  async function project(req: FastifyRequest): Promise<Principal> {
    const principal = await authenticate(req);
    req.principal = principal;
    const project = (req.params as { project?: unknown }).project;
    if (typeof project !== 'string') throw new ApiError('invalid_request', 'route has no project');
    if (!ID_PATTERN.test(project)) {
      throw new ApiError(
        'invalid_id',
        `project ${JSON.stringify(project)} is not a valid id: use 1-64 characters of [A-Za-z0-9_-]`,
      );
    }
    if (principal.kind === 'project' && principal.projectId !== project)
      throw notFound('project', project);
    if (principal.kind === 'admin' && !(await store.projects.get(project)))
      throw notFound('project', project);
    return principal;
  }

  return {
    /** After a key's row is revoked: no instance accepts it from now on. */
    keyRevoked: (project: string, keyId: string) => keys.revoked(project, keyId),
    /** Any valid key. */
    requireKey: async (req: FastifyRequest) => {
      req.principal = await authenticate(req);
    },
    requireAdmin: async (req: FastifyRequest) => {
      req.principal = await authenticate(req);
      if (req.principal.kind !== 'admin')
        throw new ApiError('unauthorized', 'this route needs the admin key');
    },
    /** The project in the path, for the admin key and the project's keys of role `admin`. */
    requireProject: async (req: FastifyRequest) => {
      const principal = await project(req);
      if (principal.kind === 'project' && principal.role === KeyRole.caller) {
        throw new ApiError(
          'forbidden',
          'this key has the role caller: it may call tools, start tasks, and read and cancel what it started; this route needs a key of role admin',
          { role: principal.role },
        );
      }
    },
    /**
     * The project in the path, for every key of it, callers included: the route itself limits a
     * caller to what it started (see callerKeyOf).
     */
    requireCaller: async (req: FastifyRequest) => {
      await project(req);
    },
  };
}

/** The key a route must limit its answer to: a caller's own; undefined for admins. */
export function callerKeyOf(req: FastifyRequest): string | undefined {
  const p = req.principal;
  return p?.kind === 'project' && p.role === KeyRole.caller ? p.keyId : undefined;
}

const KEY_ID = /^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$/;

/**
 * The API key a request authenticated with, recorded on what it starts; undefined for the admin
 * key and for an MCP OAuth token (no key of the project).
 */
export function keyIdOf(req: FastifyRequest): string | undefined {
  const p = req.principal;
  return p?.kind === 'project' && KEY_ID.test(p.keyId) ? p.keyId : undefined;
}
export type Auth = ReturnType<typeof createAuth>;
