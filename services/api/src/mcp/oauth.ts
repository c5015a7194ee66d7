// The MCP facade as an OAuth 2.1 resource server, when [mcp_oauth] names an issuer. A project's
// resource is <resource_base_url>/v1/projects/<p>/mcp; its Protected Resource Metadata (RFC 9728)
// is served at /.well-known/oauth-protected-resource/v1/projects/<p>/mcp. A bearer that looks
// like a JWT is checked against the issuer's JWKS with `jose`: signature, `iss`, `aud` equal to
// the resource, expiry, the scope, and the project claim equal to the path's project; anything
// else is a project key, as on every route. A 401 carries `WWW-Authenticate: Bearer
// resource_metadata=..., scope=...` so a client can find the authorization server.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createRemoteJWKSet, errors as joseErrors, jwtVerify } from 'jose';
import type { McpOauthConfig } from '@toolmesh/config';
import type { Auth } from '../auth.ts';
import { ApiError } from '../errors.ts';

const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export const metadataPath = (project: string) =>
  `/.well-known/oauth-protected-resource/v1/projects/${project}/mcp`;

export interface ResourceMetadata {
  resource: string;
  authorization_servers: string[];
  scopes_supported: string[];
  bearer_methods_supported: string[];
}

export interface McpAuth {
  /** onRequest of the facade route: a JWT of the issuer, or a project key. */
  authenticate: (req: FastifyRequest, reply: FastifyReply) => Promise<void>;
  /** RFC 9728 metadata of a project's resource; undefined when OAuth is off. */
  metadata: (project: string) => ResourceMetadata | undefined;
}

export function createMcpAuth(config: McpOauthConfig, auth: Auth): McpAuth {
  const enabled = config.issuer !== '';
  const base = config.resource_base_url.replace(/\/+$/, '');
  const resource = (project: string) => `${base}/v1/projects/${project}/mcp`;
  const jwks = enabled ? createRemoteJWKSet(new URL(config.jwks_url)) : undefined;

  function challenge(reply: FastifyReply, project: string, error?: string) {
    const parts = [
      `resource_metadata="${base}${metadataPath(project)}"`,
      `scope="${config.scope}"`,
      ...(error ? [`error="${error}"`] : []),
    ];
    void reply.header('www-authenticate', `Bearer ${parts.join(', ')}`);
  }

  async function verify(token: string, project: string, reply: FastifyReply): Promise<void> {
    let payload;
    try {
      ({ payload } = await jwtVerify(token, jwks!, {
        issuer: config.issuer,
        audience: resource(project),
      }));
    } catch (err) {
      challenge(reply, project, 'invalid_token');
      const why =
        err instanceof joseErrors.JWTExpired
          ? 'the token has expired'
          : err instanceof joseErrors.JWTClaimValidationFailed
            ? `the token's ${err.claim} claim does not match`
            : 'the token could not be verified';
      throw new ApiError('unauthorized', why);
    }
    const scopes = typeof payload['scope'] === 'string' ? payload['scope'].split(' ') : [];
    if (!scopes.includes(config.scope)) {
      challenge(reply, project, 'insufficient_scope');
      throw new ApiError(
        { code: 'insufficient_scope', status: 403 },
        `the token lacks the scope ${config.scope}`,
      );
    }
    if (payload[config.project_claim] !== project) {
      challenge(reply, project, 'invalid_token');
      throw new ApiError('unauthorized', `the token is not for project ${project}`);
    }
  }

  return {
    authenticate: async (req, reply) => {
      const project = (req.params as { project?: string }).project ?? '';
      const header = req.headers.authorization;
      const token = header?.startsWith('Bearer ') ? header.slice(7).trim() : undefined;
      if (enabled && token && JWT.test(token)) {
        await verify(token, project, reply);
        // A token with the facade's scope acts for the whole project, as an admin key would.
        req.principal = { kind: 'project', projectId: project, keyId: 'oauth', role: 'admin' };
        return;
      }
      try {
        await auth.requireProject(req);
      } catch (err) {
        if (enabled && err instanceof ApiError && err.status === 401) challenge(reply, project);
        throw err;
      }
    },
    metadata: (project) =>
      enabled
        ? {
            resource: resource(project),
            authorization_servers: [config.issuer],
            scopes_supported: [config.scope],
            bearer_methods_supported: ['header'],
          }
        : undefined,
  };
}
