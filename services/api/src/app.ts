// Builds the HTTP API: Fastify with zod schemas for every request and response, an OpenAPI 3.1
// document generated from them, one error shape, authentication, metrics, and the route groups.
import Fastify, { LogController } from 'fastify';
import fastifySwagger from '@fastify/swagger';
import multipart from '@fastify/multipart';
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { createAuth } from './auth.ts';
import { createKeyCache } from './key-cache.ts';
import { createSubjects, jsonDepth } from '@toolmesh/protocol';
import type { ApiDeps, RouteDeps } from './deps.ts';
import { ApiError, errorHandler } from './errors.ts';
import { createHttpMetrics } from './metrics.ts';
import { healthRoutes } from './routes/health.ts';
import { projectRoutes } from './routes/projects.ts';
import { executionRoutes } from './routes/executions.ts';
import { taskRoutes } from './routes/tasks.ts';
import { threadRoutes } from './routes/threads.ts';
import { cardRoutes } from './routes/cards.ts';
import { toolRoutes } from './routes/tools.ts';
import { openApiRoutes } from './routes/openapi.ts';
import { profileRoutes } from './routes/profiles.ts';
import { agentRoutes } from './routes/agents.ts';
import { skillRoutes } from './routes/skills.ts';
import { artifactRoutes } from './routes/artifacts.ts';
import { sandboxRoutes } from './routes/sandboxes.ts';
import { mcpServerRoutes } from './routes/mcp-servers.ts';
import { mcpImportRoutes } from './routes/mcp-import.ts';
import { secretRoutes } from './routes/secrets.ts';
import { busCredentialRoutes } from './routes/bus-credentials.ts';
import { scheduleRoutes } from './routes/schedules.ts';
import { fileRoutes } from './routes/files.ts';
import { documentRoutes } from './routes/documents.ts';
import { mcpMetadataRoutes, mcpRoutes } from './routes/mcp.ts';
import { consoleReadRoutes } from './routes/console-reads.ts';
import { consoleRoutes } from './routes/console.ts';
import { eventRoutes } from './routes/events.ts';
import { approvalRoutes } from './routes/approvals.ts';
import { inputRequestRoutes } from './routes/input-requests.ts';
import { createProjectStreams } from './project-streams.ts';
import { createRegistryEvents } from './registry-events.ts';
import { guardConnections } from './connection-guard.ts';
import { inflightLimit } from './inflight.ts';
import { createSlots } from './slots.ts';

export async function buildApp(deps: ApiDeps) {
  const api = deps.config.api;
  const app = Fastify({
    loggerInstance: deps.logger.child({ component: 'http' }),
    bodyLimit: api.body_limit_bytes,
    // One line per request at info would drown the calls' own logs; metrics count requests.
    logController: new LogController({ disableRequestLogging: true }),
    // Slow clients (docs/operations.md, section 13). Without these a client trickling header
    // lines holds its socket for ever: Node times headers and requests out only when asked to,
    // and checks them every 30 s unless told otherwise.
    http: {
      headersTimeout: api.headers_timeout_ms,
      connectionsCheckingInterval: Math.min(1_000, api.headers_timeout_ms),
    },
    requestTimeout: api.request_timeout_ms,
    keepAliveTimeout: api.keep_alive_timeout_ms,
    connectionTimeout: api.connection_timeout_ms,
  }).withTypeProvider<ZodTypeProvider>();
  guardConnections(app.server, {
    maxTotal: api.max_connections,
    maxPerAddress: api.max_connections_per_address,
    logger: deps.logger,
  });
  app.addHook('preHandler', inflightLimit(api.max_inflight_requests_per_key));
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // `curl -X POST -H 'content-type: application/json' .../cancel` sends no body: an empty JSON
  // body is read as `{}` (a route's required fields are still named when missing), not as a
  // parse error.
  // A body nested deeper than api.max_json_depth is refused here, before any route: JSON.parse
  // reads any depth, but zod, ajv, JSON.stringify and Postgres recurse, and a few thousand
  // levels overflow their stack (a 500 where the caller sent bad input).
  const json = app.getDefaultJsonParser('error', 'error');
  const maxDepth = deps.config.api.max_json_depth;
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text === '') return done(null, {});
    void json(req, text, (err, value) => {
      if (err) return done(err, undefined);
      if (jsonDepth(value, maxDepth) > maxDepth) {
        return done(
          new ApiError(
            'nesting_too_deep',
            `the request body nests deeper than ${maxDepth} levels of objects and arrays (api.max_json_depth)`,
            { limit_depth: maxDepth },
          ),
          undefined,
        );
      }
      done(null, value);
    });
  });
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((req, reply) =>
    reply.status(404).send({
      error: { code: 'not_found', message: `no route ${req.method} ${req.url.split('?')[0]}` },
    }),
  );

  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'toolmesh api',
        version: '1.0.0',
        description:
          'Projects, tools, skills, agents, tasks and executions of a toolmesh deployment.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(multipart, {
    limits: { fileSize: api.upload_limit_bytes, files: 1, fields: 10, parts: 12 },
  });

  const metrics = createHttpMetrics();
  app.addHook('onResponse', (req, reply, done) => {
    metrics.observe(
      req.method,
      req.routeOptions.url ?? 'unmatched',
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });

  const keys = createKeyCache({
    store: deps.store,
    nc: deps.nc,
    subjects: createSubjects(deps.config.nats.subject_root),
    ttlMs: api.auth_cache_ttl_ms,
    logger: deps.logger,
  });
  app.addHook('onClose', () => keys.close());
  const projectStreams = createProjectStreams(deps);
  // Every project's command stream with this configuration's limits; in the background, so the
  // api answers meanwhile (a call of a project not yet reached makes its stream itself).
  void projectStreams.reconcile().then(
    (n) => deps.logger.info({ projects: n }, 'project command streams reconciled'),
    (err: unknown) => deps.logger.warn({ err }, 'reconciling the project command streams failed'),
  );
  const routeDeps: RouteDeps = {
    ...deps,
    projectStreams,
    // One count for every kind of event stream, so the cap is what the instance holds open.
    streams: createSlots({
      what: 'event streams',
      total: api.sse_max_streams,
      perOwner: api.sse_max_streams_per_project,
      owner: 'project',
      totalSetting: 'sse_max_streams',
      perOwnerSetting: 'sse_max_streams_per_project',
      totalCode: 'stream_capacity',
      perOwnerCode: 'stream_limit',
    }),
    auth: createAuth(deps.store, api, keys),
    registryEvents: createRegistryEvents(deps.nc, deps.config.nats.subject_root, deps.logger),
  };
  await app.register(healthRoutes(routeDeps, metrics));
  await app.register(projectRoutes(routeDeps), { prefix: '/v1' });
  await app.register(executionRoutes(routeDeps), { prefix: '/v1' });
  await app.register(taskRoutes(routeDeps), { prefix: '/v1' });
  await app.register(threadRoutes(routeDeps), { prefix: '/v1' });
  await app.register(cardRoutes(routeDeps), { prefix: '/v1' });
  await app.register(toolRoutes(routeDeps), { prefix: '/v1' });
  await app.register(openApiRoutes(routeDeps), { prefix: '/v1' });
  await app.register(profileRoutes(routeDeps), { prefix: '/v1' });
  await app.register(agentRoutes(routeDeps), { prefix: '/v1' });
  await app.register(skillRoutes(routeDeps), { prefix: '/v1' });
  await app.register(artifactRoutes(routeDeps), { prefix: '/v1' });
  await app.register(sandboxRoutes(routeDeps), { prefix: '/v1' });
  await app.register(mcpServerRoutes(routeDeps), { prefix: '/v1' });
  await app.register(mcpImportRoutes(routeDeps), { prefix: '/v1' });
  await app.register(secretRoutes(routeDeps), { prefix: '/v1' });
  await app.register(busCredentialRoutes(routeDeps), { prefix: '/v1' });
  await app.register(scheduleRoutes(routeDeps), { prefix: '/v1' });
  await app.register(fileRoutes(routeDeps), { prefix: '/v1' });
  await app.register(documentRoutes(routeDeps), { prefix: '/v1' });
  await app.register(mcpRoutes(routeDeps), { prefix: '/v1' });
  await app.register(consoleReadRoutes(routeDeps), { prefix: '/v1' });
  await app.register(eventRoutes(routeDeps), { prefix: '/v1' });
  await app.register(approvalRoutes(routeDeps), { prefix: '/v1' });
  await app.register(inputRequestRoutes(routeDeps), { prefix: '/v1' });
  await app.register(mcpMetadataRoutes(routeDeps));
  await app.register(consoleRoutes());
  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
  return app;
}
export type ApiApp = Awaited<ReturnType<typeof buildApp>>;
