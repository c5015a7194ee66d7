// Per-project NATS credentials for external publishers (the SDK, the CLI, a client in another
// language). Minting signs a user JWT with the account's signing key ([nats] auth_keys): it may
// publish only that project's tool calls and cancels, subscribe only to its events, stream
// chunks and its own inbox, and use no JetStream API. The seed is answered once and stored
// nowhere. Revoking adds the user to the account's revocation list and pushes the account to
// the server through the system account: the server closes its connections at once and refuses
// new ones.
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  credentialInboxPrefix,
  loadBusKeys,
  mintUser,
  projectCredentialPermissions,
  pushAppAccount,
  type BusKeys,
} from '@toolmesh/nats-auth';
import type { BusCredential, RegistryStore } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { ProjectParams, Uuid, iso } from '../schemas.ts';

const CredentialOut = z
  .object({
    id: z.string(),
    project: z.string(),
    name: z.string(),
    public_key: z.string().describe('the NATS user (U...)'),
    inbox_prefix: z.string().describe('connect with this inbox prefix: replies arrive under it'),
    subject_root: z.string(),
    created_at: z.string(),
    revoked_at: z.string().nullable(),
  })
  .meta({ id: 'BusCredential' });
const IssuedOut = CredentialOut.extend({
  jwt: z.string().describe('the user JWT'),
  seed: z.string().describe('the user seed: shown once, never stored'),
  creds: z.string().describe('a .creds file (JWT and seed) for TOOLMESH_BUS_CREDS'),
}).meta({ id: 'IssuedBusCredential' });
const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse, 503: ErrorResponse };

export const busCredentialRoutes =
  ({
    store,
    auth,
    config,
    logger,
    projectStreams,
  }: RouteDeps<RegistryStore>): FastifyPluginAsyncZod =>
  async (app) => {
    const log = logger.child({ component: 'bus-credentials' });
    const root = config.nats.subject_root;
    let keys: BusKeys | undefined;
    if (config.nats.auth_keys !== '') keys = loadBusKeys(config.nats.auth_keys);

    const out = (c: BusCredential) => ({
      id: c.credentialId,
      project: c.projectId,
      name: c.name,
      public_key: c.publicKey,
      inbox_prefix: c.inboxPrefix,
      subject_root: root,
      created_at: c.createdAt.toISOString(),
      revoked_at: iso(c.revokedAt),
    });
    const needKeys = (): BusKeys => {
      if (keys === undefined)
        throw new ApiError(
          'bus_auth_unconfigured',
          'NATS runs without authentication here ([nats] auth_keys is not set): there are no bus credentials to issue',
        );
      return keys;
    };
    /** The revocation list of Postgres, onto the server. */
    const push = async (k: BusKeys, onlyIfChanged = false): Promise<void> => {
      try {
        await store.busCredentials.pushRevocations(async (list) => {
          await pushAppAccount(k, config.nats.url, list, undefined, { onlyIfChanged });
        });
      } catch (err) {
        log.error({ err: { message: (err as Error).message } }, 'account update not pushed');
        throw new ApiError(
          'unavailable',
          'the revocation is recorded but NATS did not take the account update yet; retry the DELETE',
        );
      }
    };
    // A server restarted from an older account JWT forgets revocations: push them at start.
    if (keys !== undefined) {
      const k = keys;
      app.addHook('onReady', async () => {
        // Only when the server's list differs: a push re-applies the account's JetStream, and
        // every service's JetStream request fails for that moment.
        void push(k, true).catch(() => undefined);
      });
    }

    app.post(
      '/projects/:project/bus-credentials',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['bus-credentials'],
          summary: 'Issue a NATS credential of this project (the seed is shown once)',
          params: ProjectParams,
          body: z.strictObject({
            name: z.string().min(1).max(128).describe('what it is for'),
          }),
          response: { 201: IssuedOut, ...errors },
        },
      },
      async (req, reply) => {
        const k = needKeys();
        const { project } = req.params;
        // The tenant may publish at once: its project's command stream must be there.
        await projectStreams.ensure(project).catch((err: unknown) => {
          log.warn({ err, project }, 'making the project command stream failed');
          throw new ApiError('unavailable', 'the message bus is unavailable; retry later');
        });
        const id = randomUUID();
        const inboxPrefix = credentialInboxPrefix(project, id);
        const user = await mintUser(
          k,
          `${project}/${req.body.name}`,
          projectCredentialPermissions(root, project, inboxPrefix),
        );
        const row = await store.busCredentials.insert({
          credentialId: id,
          projectId: project,
          name: req.body.name,
          publicKey: user.publicKey,
          inboxPrefix,
        });
        log.info({ project, credential: id, public_key: user.publicKey }, 'bus credential issued');
        return reply
          .status(201)
          .send({ ...out(row), jwt: user.jwt, seed: user.seed, creds: user.creds });
      },
    );

    app.get(
      '/projects/:project/bus-credentials',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['bus-credentials'],
          summary: 'List the NATS credentials of this project (never a seed)',
          params: ProjectParams,
          response: { 200: z.object({ credentials: z.array(CredentialOut) }), ...errors },
        },
      },
      async (req) => ({
        credentials: (await store.busCredentials.list(req.params.project)).map(out),
      }),
    );

    app.delete(
      '/projects/:project/bus-credentials/:id',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['bus-credentials'],
          summary: 'Revoke a NATS credential: its connections are closed and it cannot connect',
          params: ProjectParams.extend({ id: Uuid }),
          response: { 200: CredentialOut, ...errors },
        },
      },
      async (req) => {
        const k = needKeys();
        const { project, id } = req.params;
        const row = await store.busCredentials.revoke(project, id);
        if (!row) throw notFound('bus credential', id);
        await push(k);
        log.info({ project, credential: id }, 'bus credential revoked');
        return out(row);
      },
    );
  };
