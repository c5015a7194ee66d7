// Passthrough of an MCP server's other methods (resources, prompts, completion, logging), on
// request of the api (`ctl.mcp.<server>.rpc`, a core NATS request answered by one instance of
// the tools services' MCP queue group). The request goes over the pooled connection, so the
// server's auth, egress rules and sandbox are the ones its tool calls use; the server's result
// or JSON-RPC error is answered as sent. A connection that cannot be opened, or fails, is an
// error of the mesh (-32603) with the reason; the api never waits for nothing. Resource
// subscriptions are counted per connection, so the server hears an unsubscribe only once no
// session of the project holds the URI; they and the log level outlive the connection (held.ts).
import type { Msg, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { subscribeGuarded, type Bus } from '@toolmesh/bus';
import { decodeMessage, encodeMessage, type McpRpcReply } from '@toolmesh/protocol';
import { egressDeniedIn } from '../egress.ts';
import type { McpPool } from './pool.ts';

export interface McpRpcDeps {
  bus: Bus;
  pool: McpPool;
  /** Bounds one request: connect and answer ([tools] mcp_discovery_timeout_ms). */
  timeoutMs: number;
  logger: Logger;
}

const INTERNAL_ERROR = -32603;

async function answer(deps: McpRpcDeps, msg: Msg): Promise<McpRpcReply> {
  const parsed = deps.bus.subjects.parse(msg.subject);
  if (parsed.kind !== 'ctl' || parsed.component !== 'mcp' || parsed.action !== 'rpc') {
    throw new Error(`${msg.subject} is not an MCP passthrough subject`);
  }
  const req = decodeMessage('mcp_rpc', msg.data);
  const signal = AbortSignal.timeout(deps.timeoutMs);
  const pooled = await deps.pool.get(parsed.project, parsed.server, signal);
  const send = async (): Promise<McpRpcReply> => {
    // A 2026-07-28 client's request goes on that revision when the server speaks it: its
    // capabilities, answers and requestState reach the server, and `input_required` comes back.
    const modern = pooled.conn.modern;
    const res =
      req.mcp && modern && (await modern.supported(signal))
        ? await modern.request(
            req.method,
            {
              ...req.params,
              ...(req.mcp.input_responses ? { inputResponses: req.mcp.input_responses } : {}),
              ...(req.mcp.request_state !== undefined
                ? { requestState: req.mcp.request_state }
                : {}),
            },
            { clientCapabilities: req.mcp.client_capabilities, signal },
          )
        : await pooled.conn.request(req.method, req.params, {
            signal,
            timeoutMs: deps.timeoutMs,
          });
    return 'error' in res ? { v: 1, error: res.error } : { v: 1, result: res.result };
  };
  const held = deps.pool.held.of(parsed.project, parsed.server);
  if (req.method === 'logging/setLevel') {
    // Kept to be set again on a new connection (held.ts).
    const reply = await send();
    if (!reply.error && typeof req.params['level'] === 'string') held.level = req.params['level'];
    return reply;
  }
  const uri = req.params['uri'];
  const watching = req.method === 'resources/subscribe' || req.method === 'resources/unsubscribe';
  if (!watching || typeof uri !== 'string') return send();
  // A connection is shared by every session of the project: one session's unsubscribe must not
  // end the updates another subscribed to. Counted per server; the server hears the last. The
  // counts outlive the connection: a new one is subscribed again (held.ts).
  const counts = held.subscriptions;
  if (req.method === 'resources/subscribe') {
    const reply = await send();
    if (!reply.error) counts.set(uri, (counts.get(uri) ?? 0) + 1);
    return reply;
  }
  const holders = counts.get(uri) ?? 0;
  if (holders > 1) {
    counts.set(uri, holders - 1);
    return { v: 1, result: {} };
  }
  counts.delete(uri);
  return send();
}

/** Answers passthrough requests until unsubscribed. */
export function serveMcpRpc(deps: McpRpcDeps): Subscription {
  const log = deps.logger.child({ component: 'mcp-rpc' });
  return subscribeGuarded(deps.bus.nc, deps.bus.subjects.mcpRpcFilter(), {
    queue: deps.bus.names.mcpDiscoveryQueue,
    log,
    onMessage: (msg: Msg) => {
      void (async () => {
        let reply: McpRpcReply;
        try {
          reply = await answer(deps, msg);
        } catch (err) {
          const denied = egressDeniedIn(err);
          const message = denied?.message ?? (err instanceof Error ? err.message : String(err));
          log.warn({ err, subject: msg.subject }, 'MCP passthrough failed');
          reply = { v: 1, error: { code: INTERNAL_ERROR, message: `the MCP server: ${message}` } };
        }
        let data = encodeMessage('mcp_rpc_reply', reply);
        if (data.length > deps.bus.nc.info!.max_payload) {
          data = encodeMessage('mcp_rpc_reply', {
            v: 1,
            error: {
              code: INTERNAL_ERROR,
              message: `the MCP server's answer (${data.length} bytes) is larger than the message bus carries (${deps.bus.nc.info!.max_payload})`,
            },
          });
        }
        msg.respond(data);
      })();
    },
  });
}
