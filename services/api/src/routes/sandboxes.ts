// A project's sandbox sessions (state.sandboxes), read-only: what runs where, since when, until
// when, and who holds its lock. Creating and reaping them is the skills service's and the
// sandbox-reaper's business.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { SandboxListing, SkillsStore } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ErrorResponse } from '../errors.ts';
import { Limit, ProjectParams, iso } from '../schemas.ts';

const SandboxState = z.enum(['active', 'reaping', 'destroyed', 'error']);

const SandboxOut = z
  .object({
    sandbox_id: z.string(),
    provider: z.enum(['local', 'e2b']),
    agent_id: z.string().nullable(),
    session_key: z.string(),
    state: SandboxState,
    created_at: z.string(),
    last_used_at: z.string(),
    idle_expires_at: z.string().nullable(),
    hard_expires_at: z.string().nullable(),
    lock_owner: z.string().nullable().describe('the tool call holding the sandbox, if any'),
    lock_expires_at: z.string().nullable(),
    reap_attempts: z.number().int(),
    last_error: z.string().nullable(),
  })
  .meta({ id: 'Sandbox' });

const sandboxOut = (s: SandboxListing) => ({
  sandbox_id: s.sandbox_id,
  provider: s.provider,
  agent_id: s.agent_id,
  session_key: s.session_key,
  state: s.state,
  created_at: s.created_at.toISOString(),
  last_used_at: s.last_used_at.toISOString(),
  idle_expires_at: iso(s.idle_expires_at),
  hard_expires_at: iso(s.hard_expires_at),
  lock_owner: s.lock_owner,
  lock_expires_at: iso(s.lock_expires_at),
  reap_attempts: s.reap_attempts,
  last_error: s.last_error,
});

export const sandboxRoutes =
  ({ store, auth }: RouteDeps<SkillsStore>): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      '/projects/:project/sandboxes',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['sandboxes'],
          summary: "The project's sandboxes, most recently used first",
          params: ProjectParams,
          querystring: z.strictObject({ state: SandboxState.optional(), limit: Limit }),
          response: {
            200: z.object({ sandboxes: z.array(SandboxOut) }),
            400: ErrorResponse,
            401: ErrorResponse,
            404: ErrorResponse,
          },
        },
      },
      async (req) => ({
        sandboxes: (
          await store.sandboxes.listByProject(req.params.project, {
            state: req.query.state,
            limit: req.query.limit,
          })
        ).map(sandboxOut),
      }),
    );
  };
