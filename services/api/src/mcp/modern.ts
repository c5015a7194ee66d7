// The 2026-07-28 revision of the facade (stateless requests, `server/discover`, list results with
// `ttlMs`/`cacheScope`), served with the 2.x SDK (`@modelcontextprotocol/server`): its
// createMcpHandler builds a server per request from the factory below, with the same handlers
// as the 1.x sessions (facade.ts). 2025-era requests never reach it: the route tells them apart
// with the SDK's isLegacyRequest and keeps them on the 1.x sessions, so the 2025 revisions keep
// initialize, sessions and list_changed.
import {
  Server,
  createMcpHandler,
  type McpHttpHandler,
  type McpRequestContext,
} from '@modelcontextprotocol/server';
import type { Facade, FacadeScope } from './facade.ts';
import { FACADE_NAME, FACADE_VERSION } from './facade.ts';
import type { readArtifact } from './resources.ts';

/** A modern request's scope travels in the SDK's authInfo (the route authenticated it). */
export interface ModernScope extends FacadeScope {
  [key: string]: unknown;
}

/** Tool lists may be cached by the requesting client for a short while; registry edits are rare. */
const LIST_TTL_MS = 10_000;

export function createModernHandler(deps: {
  facade: Facade;
  readResource: (project: string, uri: string) => ReturnType<typeof readArtifact>;
}): McpHttpHandler {
  const { facade } = deps;
  const factory = (ctx: McpRequestContext) => {
    const scope = ctx.authInfo?.extra as ModernScope | undefined;
    if (!scope) throw new Error('a modern MCP request reached the facade without its scope');
    const server = new Server(
      { name: FACADE_NAME, version: FACADE_VERSION },
      {
        capabilities: { tools: { listChanged: true }, resources: {} },
        cacheHints: { 'tools/list': { ttlMs: LIST_TTL_MS, cacheScope: 'private' } },
        instructions:
          'Tools of a toolmesh project. Each call runs on the mesh and is recorded as an execution; ' +
          'set _meta["io.toolmesh/idempotency-key"] to make a re-sent call the same call.',
      },
    );
    // The two SDK lines type JSON Schemas apart; the values are the same registry JSON.
    server.setRequestHandler('tools/list', async () => (await facade.handleList(scope)) as never);
    server.setRequestHandler('tools/call', async (req, c) => {
      const result = await facade.handleCall(
        scope,
        // Tasks on this revision are the io.modelcontextprotocol/tasks extension, not served
        // yet: a `task` field is not the 2025-11 form here.
        { ...(req.params as Record<string, unknown>), task: undefined } as never,
        {
          signal: c.mcpReq.signal,
          sendNotification: (n) => c.mcpReq.notify(n),
        },
      );
      return result as never;
    });
    server.setRequestHandler('resources/list', () => ({ resources: [] }));
    server.setRequestHandler(
      'resources/read',
      async (req) => (await deps.readResource(scope.project, req.params.uri)) as never,
    );
    return server;
  };
  return createMcpHandler(factory, { legacy: 'reject' });
}
