// Discovery of a project's MCP server, on request of the api (`ctl.mcp.<server>.refresh`, a core
// NATS request answered by one instance of the queue group). It lists the server's tools over
// the pooled connection (opening one when there is none, so the refresh also re-opens a dead
// server), maps their names to registry ids, applies the listing to resource.tools in one
// transaction (added, updated, vanished ones disabled, changed definitions held for approval
// when [tools] pin_definitions is on), tells every tool service to drop its
// cached copies, and answers with what it did. A failure is recorded on the server (state error,
// last_error) and answered too: the api never waits for nothing.
import type { Msg, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { subscribeGuarded, type Bus } from '@toolmesh/bus';
import { mapToolNames, type McpConnection, type McpTool } from '@toolmesh/mcp';
import {
  encodeMessage,
  errorCodeOf,
  decodeMessage,
  type McpRefreshReply,
} from '@toolmesh/protocol';
import type { DiscoveredTool, RegistryStore } from '@toolmesh/store';
import { egressDeniedIn } from '../egress.ts';
import { connectionIdentityOf, type McpPool } from './pool.ts';

export interface DiscoveryDeps {
  bus: Bus;
  store: RegistryStore;
  pool: McpPool;
  /** Bounds one discovery: connect and list every page ([tools] mcp_discovery_timeout_ms). */
  timeoutMs: number;
  /**
   * [tools] pin_definitions: hold tools whose definition changed until approved. A project's
   * own setting (tools.pin_definitions in its settings) overrides it.
   */
  pinDefinitions: boolean;
  logger: Logger;
}

/** The reply of a refresh that could not list the server's tools: nothing changed. */
function failedRefresh(code: string, message: string): McpRefreshReply {
  return {
    v: 1,
    ok: false,
    state: 'error',
    tool_count: 0,
    added: [],
    updated: [],
    disabled: [],
    refused: [],
    error: { code, message },
  };
}

export async function refreshServer(
  deps: DiscoveryDeps,
  project: string,
  server: string,
): Promise<McpRefreshReply> {
  const log = deps.logger.child({ project, mcp_server: server });
  const failed = failedRefresh;
  const row = await deps.store.mcpServers.get(project, server);
  if (!row) {
    await deps.pool.drop(project, server);
    return failed('unknown_tool', `MCP server ${server} is not registered`);
  }
  if (!row.enabled) {
    await deps.pool.drop(project, server);
    return failed(
      'mcp_server_disabled',
      `MCP server ${server} is disabled: enable it to list its tools`,
    );
  }
  let listed;
  try {
    // A refresh must see the server as it is now: a connection that died is re-opened, and one
    // opened for an earlier server of the same name (deleted, then registered again) replaced.
    const signal = AbortSignal.timeout(deps.timeoutMs);
    let pooled = await deps.pool.get(project, server, signal);
    if (pooled.serverId !== connectionIdentityOf(row)) {
      await deps.pool.drop(project, server, pooled.conn);
      pooled = await deps.pool.get(project, server, signal);
    }
    try {
      listed = await pooled.conn.listTools({ signal });
      listed = [...listed, ...(await modernOnlyTools(pooled.conn, listed, signal))];
    } catch (err) {
      await deps.pool.drop(project, server, pooled.conn);
      throw err;
    }
  } catch (err) {
    const denied = egressDeniedIn(err);
    const message = denied?.message ?? (err instanceof Error ? err.message : String(err));
    log.warn({ err }, 'MCP discovery failed');
    await deps.store.mcpServers.recordError(project, server, message);
    return failed(denied?.code ?? errorCodeOf(err) ?? 'mcp_unavailable', message);
  }
  const mapping = mapToolNames(listed.map((t) => t.name));
  const tools: DiscoveredTool[] = [];
  const refused: McpRefreshReply['refused'] = [];
  listed.forEach((t, i) => {
    const m = mapping[i]!;
    if (m.id === undefined) {
      refused.push({ tool: t.name, reason: m.refused ?? 'refused' });
      return;
    }
    tools.push({
      token: m.id,
      mcpName: t.name,
      description: t.description ?? t.title ?? '',
      ...schemaOf(t.inputSchema),
      ...hintsOf(t.annotations),
      ...(t.outputSchema ? { outputSchema: t.outputSchema } : {}),
    });
  });
  const settings = await deps.store.projects.settings(project);
  const pin = settings?.tools?.pin_definitions ?? deps.pinDefinitions;
  const outcome = await deps.store.mcpServers.sync(project, server, tools, { pin });
  if (!outcome) return failed('unknown_tool', `MCP server ${server} was deleted meanwhile`);
  if (outcome === 'disabled') {
    await deps.pool.drop(project, server);
    return failed('mcp_server_disabled', `MCP server ${server} was disabled meanwhile`);
  }
  for (const name of outcome.refused) {
    refused.push({ tool: name, reason: `${name} is already the name of another tool` });
  }
  const changed = [...outcome.added, ...outcome.updated, ...outcome.disabled];
  if (changed.length > 0) {
    // Core NATS and flushed before the answer, as the api does: a call published after the
    // answer reaches every tool service after the event.
    deps.bus.publishCore(
      deps.bus.subjects.registryChanged(project),
      encodeMessage('registry_changed', { v: 1, change: 'updated', tools: changed }),
    );
    await deps.bus.nc.flush();
  }
  if (outcome.held.length > 0) {
    // The record of the change: its own registry event (tool services drop their copies, so
    // calls fail definition_changed at once), and a warning in the log for operators.
    deps.bus.publishCore(
      deps.bus.subjects.registryChanged(project),
      encodeMessage('registry_changed', {
        v: 1,
        change: 'definition_changed',
        tools: outcome.held,
      }),
    );
    await deps.bus.nc.flush();
    log.warn({ held: outcome.held }, 'MCP tool definitions changed: held until approved');
  }
  log.info(
    {
      added: outcome.added.length,
      updated: outcome.updated.length,
      disabled: outcome.disabled.length,
      refused: refused.length,
      held: outcome.held.length,
    },
    'MCP server refreshed',
  );
  return {
    v: 1,
    ok: true,
    state: 'connected',
    tool_count: outcome.toolCount,
    added: outcome.added,
    updated: outcome.updated,
    disabled: outcome.disabled,
    refused,
    held: outcome.held,
  };
}

/** The annotation hints the registry keeps: the four booleans, nothing else the server sent. */
function hintsOf(a: unknown): { annotations?: Record<string, boolean> } {
  if (typeof a !== 'object' || a === null) return {};
  const kept: Record<string, boolean> = {};
  for (const k of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint']) {
    const v = (a as Record<string, unknown>)[k];
    if (typeof v === 'boolean') kept[k] = v;
  }
  return Object.keys(kept).length > 0 ? { annotations: kept } : {};
}

/**
 * The registry's copy of a tool's input schema. Registry schemas are JSON Schema 2020-12 (the
 * dialect MCP names as the default); servers built on zod often declare draft-07 in `$schema`,
 * which a 2020-12 validator cannot load, while the keywords they use mean the same in both. The
 * declaration leaves the parameters (models are shown them as function parameters) and is kept
 * in the tool's spec.
 */
function schemaOf(inputSchema: Record<string, unknown>): {
  parameters: Record<string, unknown>;
  schemaDialect?: string;
} {
  const { $schema, ...parameters } = inputSchema;
  return typeof $schema === 'string' ? { parameters, schemaDialect: $schema } : { parameters };
}

/**
 * Refreshes a server when it says its tool set changed. Notifications arriving while a refresh
 * of that server runs lead to one more refresh after it, not one each.
 */
export function createAutoRefresh(
  deps: () => DiscoveryDeps,
): (project: string, server: string) => void {
  const running = new Map<string, { again: boolean }>();
  return (project, server) => {
    const key = `${project}\u0000${server}`;
    const current = running.get(key);
    if (current) {
      current.again = true;
      return;
    }
    const state = { again: false };
    running.set(key, state);
    void (async () => {
      try {
        do {
          state.again = false;
          const d = deps();
          const reply = await refreshServer(d, project, server).catch((err: unknown) => {
            d.logger.warn({ err, project, mcp_server: server }, 'automatic MCP refresh failed');
            return undefined;
          });
          if (reply?.ok) {
            d.logger.info(
              { project, mcp_server: server, added: reply.added, disabled: reply.disabled },
              'MCP server changed its tools; registry refreshed',
            );
          }
        } while (state.again);
      } finally {
        running.delete(key);
      }
    })();
  };
}

/** Answers refresh requests until unsubscribed. */
export function serveDiscovery(deps: DiscoveryDeps): Subscription {
  const log = deps.logger.child({ component: 'mcp-discovery' });
  return subscribeGuarded(deps.bus.nc, deps.bus.subjects.mcpRefreshFilter(), {
    queue: deps.bus.names.mcpDiscoveryQueue,
    log,
    onMessage: (msg: Msg) => {
      void (async () => {
        let reply: McpRefreshReply;
        try {
          const parsed = deps.bus.subjects.parse(msg.subject);
          if (parsed.kind !== 'ctl' || parsed.component !== 'mcp') {
            throw new Error(`${msg.subject} is not an MCP refresh subject`);
          }
          decodeMessage('mcp_refresh', msg.data);
          reply = await refreshServer(deps, parsed.project, parsed.server);
        } catch (e) {
          log.error({ err: e, subject: msg.subject }, 'MCP refresh failed');
          reply = failedRefresh(errorCodeOf(e) ?? 'internal_error', (e as Error).message);
        }
        msg.respond(encodeMessage('mcp_refresh_reply', reply));
      })();
    },
  });
}

/**
 * Tools a server lists on the 2026-07-28 revision only (a tool that needs that revision's
 * multi-round-trip input, say): registered too, so that a 2026 client can call them through
 * the mesh. A server that does not speak the revision, or fails to list on it, adds none.
 */
async function modernOnlyTools(
  conn: McpConnection,
  listed: readonly McpTool[],
  signal: AbortSignal,
): Promise<McpTool[]> {
  if (!conn.modern || !(await conn.modern.supported(signal))) return [];
  const reply = await conn.modern
    .request('tools/list', {}, { clientCapabilities: {}, signal })
    .catch(() => undefined);
  const tools = reply && 'result' in reply ? reply.result['tools'] : undefined;
  if (!Array.isArray(tools)) return [];
  const known = new Set(listed.map((t) => t.name));
  return (tools as McpTool[]).filter(
    (t) => typeof t?.name === 'string' && typeof t.inputSchema === 'object' && !known.has(t.name),
  );
}
