// The project's facade serves its MCP servers' prompts and resources beside its tools, under
// prefixed names: prompt `<server>__<prompt>`, resource `toolmesh://mcp-servers/<server>/<uri>`
// (templates alike), so two servers' names never meet. Each request goes to the server through
// upstream.ts; lists ask every enabled server of the project (first page each) and leave out a
// server that has none or cannot answer. A prefixed name of a server the project does not have
// is unknown, whoever's it is.
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { McpCallEnvelope } from '@toolmesh/protocol';
import type { RegistryStore } from '@toolmesh/store';
import { UpstreamError, type Upstream } from './upstream.ts';
import { FEDERATED_RESOURCE_PREFIX } from './notices.ts';

const SEPARATOR = '__';
const RESOURCE_PREFIX = FEDERATED_RESOURCE_PREFIX;

type Json = Record<string, unknown>;

export function createFederation(deps: { store: RegistryStore; upstream: Upstream }) {
  const { store, upstream } = deps;

  async function servers(project: string): Promise<string[]> {
    return (await store.mcpServers.list(project)).filter((s) => s.enabled).map((s) => s.name);
  }

  /** Every enabled server's answer to a list request, with the server's name. */
  async function gather(
    project: string,
    method: 'prompts/list' | 'resources/list' | 'resources/templates/list',
  ): Promise<{ server: string; result: Json }[]> {
    const names = await servers(project);
    const answers = await Promise.all(
      names.map((server) =>
        upstream.request(project, server, method, {}).then(
          (result) => ({ server, result }),
          () => undefined,
        ),
      ),
    );
    return answers.filter((a) => a !== undefined);
  }

  /** The server of a prefixed name, if the project has it enabled. */
  async function ownServer(project: string, server: string, what: string): Promise<void> {
    if (!(await servers(project)).includes(server)) {
      throw new UpstreamError(ErrorCode.InvalidParams, `unknown ${what}`);
    }
  }

  /** The server of a prefixed resource URI and the URI the server knows; throws if unknown. */
  async function locate(project: string, uri: string): Promise<{ server: string; uri: string }> {
    const rest = uri.startsWith(RESOURCE_PREFIX) ? uri.slice(RESOURCE_PREFIX.length) : '';
    const slash = rest.indexOf('/');
    if (slash <= 0) throw new UpstreamError(ErrorCode.InvalidParams, `unknown resource ${uri}`);
    const server = rest.slice(0, slash);
    await ownServer(project, server, `resource ${uri}`);
    return { server, uri: rest.slice(slash + 1) };
  }

  const prefixUri = (server: string, uri: unknown) =>
    typeof uri === 'string' ? `${RESOURCE_PREFIX}${server}/${uri}` : uri;
  const prefixContents = (server: string, result: Json): Json => ({
    ...result,
    ...(Array.isArray(result['contents'])
      ? {
          contents: (result['contents'] as Json[]).map((c) => ({
            ...c,
            uri: prefixUri(server, c['uri']),
          })),
        }
      : {}),
  });

  return {
    isFederatedUri: (uri: string) => uri.startsWith(RESOURCE_PREFIX),

    async listPrompts(project: string): Promise<Json> {
      const prompts = (await gather(project, 'prompts/list')).flatMap(({ server, result }) =>
        ((result['prompts'] as Json[] | undefined) ?? []).map((p) => ({
          ...p,
          name: `${server}${SEPARATOR}${String(p['name'])}`,
        })),
      );
      return { prompts };
    },

    /** With a 2026-07-28 client's envelope, the server gets the request on that revision. */
    async getPrompt(project: string, params: Json, mcp?: McpCallEnvelope): Promise<Json> {
      const name = typeof params['name'] === 'string' ? params['name'] : '';
      const at = name.indexOf(SEPARATOR);
      if (at <= 0) throw new UpstreamError(ErrorCode.InvalidParams, `unknown prompt ${name}`);
      const server = name.slice(0, at);
      await ownServer(project, server, `prompt ${name}`);
      return upstream.request(
        project,
        server,
        'prompts/get',
        { ...params, name: name.slice(at + SEPARATOR.length) },
        mcp,
      );
    },

    async listResources(project: string): Promise<Json> {
      const resources = (await gather(project, 'resources/list')).flatMap(({ server, result }) =>
        ((result['resources'] as Json[] | undefined) ?? []).map((r) => ({
          ...r,
          uri: prefixUri(server, r['uri']),
          name: `${server}${SEPARATOR}${String(r['name'])}`,
        })),
      );
      return { resources };
    },

    async listTemplates(project: string): Promise<Json> {
      const resourceTemplates = (await gather(project, 'resources/templates/list')).flatMap(
        ({ server, result }) =>
          ((result['resourceTemplates'] as Json[] | undefined) ?? []).map((t) => ({
            ...t,
            uriTemplate: prefixUri(server, t['uriTemplate']),
            name: `${server}${SEPARATOR}${String(t['name'])}`,
          })),
      );
      return { resourceTemplates };
    },

    locate,

    async readResource(project: string, uri: string, mcp?: McpCallEnvelope): Promise<Json> {
      const at = await locate(project, uri);
      const result = await upstream.request(
        project,
        at.server,
        'resources/read',
        { uri: at.uri },
        mcp,
      );
      return prefixContents(at.server, result);
    },
  };
}
export type Federation = ReturnType<typeof createFederation>;
