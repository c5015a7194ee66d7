// What the tools service answers for each tool call on the bus: the targets of other services
// (skills, builtin: exact subject tokens) are not its business; every other call is looked up in
// the registry. Unknown or deleted: unknown_tool. Disabled: tool_disabled. Held (its MCP
// definition changed and is not approved yet): definition_changed. External (served by a
// process of its own): skipped. http/mcp: the arguments are checked against the stored JSON
// Schema (ajv, draft 2020-12, compiled once per tool version, one ajv instance per project,
// regexes on RE2 so a tenant's pattern cannot stall the service) and the call runs through its
// kind's executor under the tool's policies.
import {
  createProjectValidators,
  SchemaCompileError,
  type ErrorObject,
  type ValidateFunction,
} from '@toolmesh/json-schema';
import type { Logger } from 'pino';
import type { ToolResolver, Resolution } from '@toolmesh/tool-service';
import { asDraft2020 } from '@toolmesh/protocol';
import { ReservedTarget } from '@toolmesh/skills';
import { ToolOrigin } from '@toolmesh/store';
import type { KindExecutors } from './kinds/kind.ts';
import { policiesOf, type PolicyDefaults } from './policies.ts';
import type { Registry, RegistryTool } from '@toolmesh/tool-service';
import { runRegistryCall, type RunDeps } from './run.ts';

/**
 * Targets whose calls other services consume (the skills service's two). Exact tokens: a call to
 * `Skills.x` is nobody else's, so it is answered here (unknown_tool) rather than left to hang.
 */
export const FOREIGN_TARGETS: ReadonlySet<string> = new Set(Object.values(ReservedTarget));

export interface ResolverOptions extends RunDeps {
  registry: Registry;
  executors: KindExecutors;
  defaults: PolicyDefaults;
  logger: Logger;
  /** Most compiled schemas kept per project; the least recently used go first. */
  maxSchemas?: number;
  /** Projects whose ajv instance is kept; the least recently used goes first. */
  maxProjects?: number;
}

const issueOf = (e: ErrorObject) => ({
  path: e.instancePath || '/',
  keyword: e.keyword,
  message: e.message ?? 'invalid',
});

export function createResolver(o: ResolverOptions): ToolResolver {
  // Not strict: the api checks schemas strictly at registration, but MCP servers' schemas come
  // as the servers wrote them; an unknown keyword there must not refuse every call.
  const validators = createProjectValidators({
    maxPerProject: o.maxSchemas ?? 1_000,
    maxProjects: o.maxProjects ?? 256,
  });

  const validatorOf = (project: string, tool: RegistryTool): ValidateFunction | Error => {
    try {
      return validators.get(
        project,
        `${tool.toolId}@${tool.version}`,
        asDraft2020(tool.parameters),
      );
    } catch (err) {
      if (err instanceof SchemaCompileError) return err;
      throw err;
    }
  };

  const reject = (
    code:
      | 'unknown_tool'
      | 'tool_disabled'
      | 'definition_changed'
      | 'invalid_arguments'
      | 'internal_error',
    message: string,
    details?: Record<string, unknown>,
  ): Resolution => ({ kind: 'reject', code, message, ...(details ? { details } : {}) });

  return {
    serves: (target) => !FOREIGN_TARGETS.has(target),
    resolve: async ({ project, target, tool: token, arguments: args }) => {
      const name = `${target}.${token}`;
      const tool = await o.registry.get(project, name);
      if (!tool)
        return reject('unknown_tool', `no tool ${name} is registered in project ${project}`);
      if (!tool.enabled) {
        const server = tool.spec['server_disabled'] === true ? tool.spec['server'] : undefined;
        return typeof server === 'string'
          ? reject(
              'tool_disabled',
              `tool ${name} is disabled: its MCP server ${server} is disabled (POST /v1/projects/${project}/mcp-servers/${server}/enable)`,
              { mcp_server: server },
            )
          : reject('tool_disabled', `tool ${name} is disabled`);
      }
      if (tool.held) {
        return reject(
          'definition_changed',
          `the MCP server changed the definition of ${name} since it was approved; it is held until someone approves the new one (POST /v1/projects/${project}/tools/${name}/approve-definition)`,
        );
      }
      if (tool.origin === ToolOrigin.external) {
        return { kind: 'skip', reason: 'an external tool: its own service runs it' };
      }
      const executor =
        tool.origin === ToolOrigin.http || tool.origin === ToolOrigin.mcp
          ? o.executors[tool.origin]
          : undefined;
      if (!executor) {
        return reject(
          'unknown_tool',
          `tool ${name} is of kind ${tool.origin}, which no executor here runs`,
        );
      }
      const validate = validatorOf(project, tool);
      if (validate instanceof Error) {
        return reject(
          'internal_error',
          `the stored parameters schema of ${name} does not compile: ${validate.message}`,
        );
      }
      if (!validate(args)) {
        const issues = (validate.errors ?? []).map(issueOf);
        const first = issues[0];
        return reject(
          'invalid_arguments',
          `invalid arguments for ${name}: ${first ? `${first.path} ${first.message}` : 'schema mismatch'}`,
          { issues },
        );
      }
      const p = policiesOf(tool.options, o.defaults);
      if (!p.ok)
        return reject('internal_error', `the stored options of ${name} are invalid: ${p.message}`);
      const policies = p.policies;
      return {
        kind: 'run',
        args,
        tool: {
          name: token,
          timeoutMs: policies.timeoutMs,
          idempotent: idempotentOf(tool),
          handler: (a, ctx) =>
            runRegistryCall(o, tool, policies, executor, a as Record<string, unknown>, ctx),
        },
      };
    },
  };
}

/** HTTP methods whose repeat has the effect of one request (RFC 9110, 9.2.2). */
const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);

/**
 * Whether a registry tool may run twice: its `options.idempotent` when set; else true for an
 * http tool of an idempotent method, false for everything else (an MCP tool's own hints are the
 * server's claims, not the operator's).
 */
export function idempotentOf(tool: RegistryTool): boolean {
  const own = tool.options['idempotent'];
  if (typeof own === 'boolean') return own;
  if (tool.origin !== ToolOrigin.http) return false;
  const method = (tool.spec as { method?: unknown } | null | undefined)?.method;
  return typeof method === 'string' && IDEMPOTENT_METHODS.has(method);
}
