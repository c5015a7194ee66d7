// Authentication: an admin key from the configuration, or a project API key (only its hash is
// stored). A project key reaches its own project only: anything of another project answers 404,
// exactly as if it did not exist.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { ID_PATTERN } from '@toolmesh/protocol';
import type { Store } from '@toolmesh/store';
import { ApiError, notFound } from './errors.ts';

export type Principal = { kind: 'admin' } | { kind: 'project'; projectId: string; keyId: string };

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

const digest = (s: string) => createHash('sha256').update(s).digest();

export function createAuth(store: Store, adminKey: string) {
  const admin = adminKey ? digest(adminKey) : undefined;

  async function authenticate(req: FastifyRequest): Promise<Principal> {
    const header = req.headers.authorization;
    const key = header?.startsWith('Bearer ') ? header.slice(7).trim() : undefined;
    if (!key)
      throw new ApiError('unauthorized', 'missing API key: send Authorization: Bearer <key>');
    if (admin && timingSafeEqual(digest(key), admin)) return { kind: 'admin' };
    const found = await store.projects.resolveKey(key);
    if (!found) throw new ApiError('unauthorized', 'unknown or revoked API key');
    return { kind: 'project', ...found };
  }

  return {
    /** Any valid key. */
    requireKey: async (req: FastifyRequest) => {
      req.principal = await authenticate(req);
    },
    requireAdmin: async (req: FastifyRequest) => {
      req.principal = await authenticate(req);
      if (req.principal.kind !== 'admin')
        throw new ApiError('unauthorized', 'this route needs the admin key');
    },
    /** The project named in the path, visible to the admin and to that project's own keys. */
    requireProject: async (req: FastifyRequest) => {
      req.principal = await authenticate(req);
      const project = (req.params as { project?: unknown }).project;
      if (typeof project !== 'string')
        throw new ApiError('invalid_request', 'route has no project');
      if (!ID_PATTERN.test(project)) {
        throw new ApiError(
          'invalid_id',
          `project ${JSON.stringify(project)} is not a valid id: use 1-64 characters of [A-Za-z0-9_-]`,
        );
      }
      if (req.principal.kind === 'project' && req.principal.projectId !== project)
        throw notFound('project', project);
      if (req.principal.kind === 'admin' && !(await store.projects.get(project)))
        throw notFound('project', project);
    },
  };
}
export type Auth = ReturnType<typeof createAuth>;
