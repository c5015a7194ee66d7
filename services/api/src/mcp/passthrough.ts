// An MCP server's own endpoint passes its resources, resource templates, subscriptions,
// prompts, completions and log level through to the server (upstream.ts), on both SDK lines;
// `toolmesh://artifacts/...` URIs stay the mesh's. The capabilities declared are the ones a
// gateway can carry; a server without one of them answers with its own error (-32601).
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CompleteRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListResourcesRequestSchema,
  ReadResourceRequestSchema,
  type ServerCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import type { McpCallEnvelope, McpPassthroughMethod } from '@toolmesh/protocol';
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import {
  envelopeOf,
  inputRequiredFor,
  openState,
  type InputBinding,
  type InputStates,
} from './modern-input.ts';
import type { Upstream } from './upstream.ts';

/**
 * What the project's facade declares beyond tools: its servers' resources and prompts under
 * prefixed names, their updates and list changes, their log messages (watch.ts, notices.ts).
 */
export const FEDERATED_CAPABILITIES = {
  resources: { subscribe: true, listChanged: true },
  prompts: { listChanged: true },
  logging: {},
} satisfies ServerCapabilities;
/** What a 2.x handler reads of its request's context here. */
export interface ModernContext {
  mcpReq: {
    envelope?: unknown;
    inputResponses?: Record<string, unknown> | undefined;
    requestState(): unknown;
  };
}

/** What a server's own endpoint declares beyond tools. */
export const PASSTHROUGH_CAPABILITIES = {
  resources: { subscribe: true, listChanged: true },
  prompts: { listChanged: true },
  completions: {},
  logging: {},
} satisfies ServerCapabilities;

const ARTIFACT_URI = 'toolmesh://artifacts/';

export interface PassthroughScope {
  project: string;
  server: string;
}

/** The mesh's own resource read (artifacts). */
type ReadArtifact = (uri: string) => Promise<unknown>;

/**
 * The passed-through methods on a 1.x (2025-era) server; subscriptions and the log level are the
 * session's (watch.ts).
 */
export function registerPassthrough(
  server: Server,
  scope: PassthroughScope,
  upstream: Upstream,
  readArtifact: ReadArtifact,
): void {
  const forward =
    (method: McpPassthroughMethod) => (req: { params?: Record<string, unknown> | undefined }) =>
      upstream.request(scope.project, scope.server, method, req.params) as Promise<never>;
  server.setRequestHandler(ListResourcesRequestSchema, forward('resources/list'));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, forward('resources/templates/list'));
  server.setRequestHandler(ReadResourceRequestSchema, (req) =>
    req.params.uri.startsWith(ARTIFACT_URI)
      ? (readArtifact(req.params.uri) as Promise<never>)
      : forward('resources/read')(req),
  );
  server.setRequestHandler(ListPromptsRequestSchema, forward('prompts/list'));
  server.setRequestHandler(GetPromptRequestSchema, forward('prompts/get'));
  server.setRequestHandler(CompleteRequestSchema, forward('completion/complete'));
}

/**
 * The same on a 2.x (2026-07-28) server, whose handlers are keyed by method name (its
 * `logging/setLevel`: watch.ts).
 */
export function registerModernPassthrough(
  server: {
    setRequestHandler(
      method: McpPassthroughMethod,
      handler: (req: { params?: unknown }, ctx: ModernContext) => Promise<never>,
    ): void;
  },
  scope: PassthroughScope,
  upstream: Upstream,
  readArtifact: ReadArtifact,
  inputStates: InputStates,
): void {
  const forward = (method: McpPassthroughMethod) => (req: { params?: unknown }) =>
    upstream.request(
      scope.project,
      scope.server,
      method,
      req.params as Record<string, unknown> | undefined,
    ) as Promise<never>;
  for (const method of [
    'resources/list',
    'resources/templates/list',
    'resources/subscribe',
    'resources/unsubscribe',
    'prompts/list',
  ] as const) {
    server.setRequestHandler(method, forward(method));
  }
  // A prompt, a resource read and a completion go to the server on the 2026-07-28 revision with
  // the client's envelope; a prompt or a read may need the client's input (SEP-2322), and an
  // input_required answer comes back with a sealed state (modern-input.ts).
  const modern = (method: ModernMethod) => (req: { params?: unknown }, ctx: ModernContext) =>
    modernRequest(
      upstream,
      inputStates,
      { project: scope.project, server: scope.server },
      method,
      (req.params ?? {}) as Record<string, unknown>,
      ctx,
    ) as Promise<never>;
  server.setRequestHandler('prompts/get', modern('prompts/get'));
  server.setRequestHandler('completion/complete', modern('completion/complete'));
  server.setRequestHandler('resources/read', (req, ctx) => {
    const uri = (req.params as { uri?: unknown } | undefined)?.uri;
    return typeof uri === 'string' && uri.startsWith(ARTIFACT_URI)
      ? (readArtifact(uri) as Promise<never>)
      : modern('resources/read')(req, ctx);
  });
}

/** The passed-through methods a 2026-07-28 client's envelope goes with. */
export type ModernMethod = 'prompts/get' | 'resources/read' | 'completion/complete';

/** What names the request a requestState is bound to: the prompt, the URI, the reference. */
function inputNameOf(method: ModernMethod, params: Record<string, unknown>): string {
  if (method === 'resources/read') return String(params['uri']);
  if (method === 'prompts/get') return String(params['name']);
  const ref = params['ref'] as { name?: unknown; uri?: unknown } | undefined;
  return String(ref?.name ?? ref?.uri);
}

/**
 * One 2026-07-28 request to a server on that revision: a re-sent request's sealed state is
 * checked and opened (a state of another project, server, method or name is -32602 and never
 * reaches the server), and the server's input_required answer is sealed for the client. `send`
 * is the server's way (the facade's prefixed names go through federated.ts).
 */
export async function modernRequest(
  upstream: Upstream,
  inputStates: InputStates,
  scope: { project: string; server: string | undefined },
  method: ModernMethod,
  params: Record<string, unknown>,
  ctx: ModernContext,
  send: (
    params: Record<string, unknown>,
    mcp: McpCallEnvelope,
  ) => Promise<Record<string, unknown>> = (p, mcp) =>
    upstream.request(scope.project, scope.server!, method, p, mcp),
): Promise<Record<string, unknown>> {
  const binding: InputBinding = {
    project: scope.project,
    server: scope.server,
    method,
    name: inputNameOf(method, params),
  };
  const opened = openState(inputStates, ctx.mcpReq.requestState(), binding);
  if (opened === 'foreign') {
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      'invalid requestState: not one this server issued',
      { code: 'invalid_request_state' },
    );
  }
  const { inputResponses: _i, requestState: _s, ...rest } = params;
  const answer = await send(rest, envelopeOf(ctx.mcpReq, opened?.upstream));
  return answer['resultType'] === 'input_required' && method !== 'completion/complete'
    ? inputRequiredFor(inputStates, answer, binding)
    : answer;
}
