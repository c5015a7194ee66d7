// Project secrets: write-only values that HTTP (and MCP) tools use for auth. Stored sealed with
// AES-256-GCM under [secrets] key; a value is never answered, logged or put in an error: the
// list shows names and dates only. Without a configured key, storing a secret is refused with a
// clear 503 rather than kept in the clear.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  createSecretBox,
  type RegistryStore,
  type SecretListing,
  SecretsKeyError,
} from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, ProjectParams } from '../schemas.ts';

/** Largest secret value accepted (API keys, tokens, a service account's JSON). */
export const MAX_SECRET_BYTES = 16 * 1024;

const SecretParams = ProjectParams.extend({
  name: Id.describe('1-64 characters of [A-Za-z0-9_-]'),
});
const SecretOut = z
  .object({ name: z.string(), created_at: z.string(), updated_at: z.string() })
  .meta({ id: 'Secret' });
const secretOut = (s: SecretListing) => ({
  name: s.name,
  created_at: s.created_at.toISOString(),
  updated_at: s.updated_at.toISOString(),
});
const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse };

export const secretRoutes =
  ({ store, auth, config }: RouteDeps<RegistryStore>): FastifyPluginAsyncZod =>
  async (app) => {
    const box = createSecretBox(config.secrets.key);

    app.put(
      '/projects/:project/secrets/:name',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['secrets'],
          summary: 'Store or replace a secret; its value can never be read back',
          params: SecretParams,
          body: z.strictObject({
            value: z
              .string()
              .min(1)
              .refine((v) => Buffer.byteLength(v, 'utf8') <= MAX_SECRET_BYTES, {
                message: `must be at most ${MAX_SECRET_BYTES} bytes`,
              })
              .describe('the secret; write-only'),
          }),
          response: { 200: SecretOut, 201: SecretOut, 503: ErrorResponse, ...errors },
        },
      },
      async (req, reply) => {
        const { project, name } = req.params;
        let sealed;
        try {
          sealed = box.seal(project, name, req.body.value);
        } catch (err) {
          if (err instanceof SecretsKeyError)
            throw new ApiError('secrets_unconfigured', err.message);
          throw err;
        }
        const created = await store.secrets.put(project, name, sealed);
        const row = (await store.secrets.list(project)).find((s) => s.name === name);
        if (!row) throw notFound('secret', name);
        return reply.status(created ? 201 : 200).send(secretOut(row));
      },
    );

    app.get(
      '/projects/:project/secrets',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['secrets'],
          summary: 'List the names of the project secrets, with dates (never values)',
          params: ProjectParams,
          response: { 200: z.object({ secrets: z.array(SecretOut) }), ...errors },
        },
      },
      async (req) => ({ secrets: (await store.secrets.list(req.params.project)).map(secretOut) }),
    );

    app.delete(
      '/projects/:project/secrets/:name',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['secrets'],
          summary: 'Delete a secret; tools that use it fail with secret_unavailable',
          params: SecretParams,
          response: { 204: z.null(), ...errors },
        },
      },
      async (req, reply) => {
        const { project, name } = req.params;
        if (!(await store.secrets.delete(project, name))) throw notFound('secret', name);
        return reply.status(204).send(null);
      },
    );
  };
