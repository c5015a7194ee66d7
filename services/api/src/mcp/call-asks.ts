// What an MCP server asks during a call (sampling, elicitation), answered by the facade client
// that made the call: the tools service asks over the bus (mcp_ask, per call), and the client's
// answer, or its refusal, goes back as the reply.
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { subscribeGuarded } from '@toolmesh/bus';
import type { Client } from '@toolmesh/client';
import {
  decodeMessage,
  encodeMessage,
  MCP_ASK_NO_CLIENT,
  type McpAskMethod,
} from '@toolmesh/protocol';

/**
 * Thrown by a CallerAsk whose client cannot answer (it did not declare the capability): the
 * tools service then answers as if no client were waiting (an input request for elicitation;
 * sampling refused, or answered by [llm] where the project allows it).
 */
export class NoClientToAsk extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NoClientToAsk';
  }
}

/** Asks a facade client on behalf of an MCP server; throws an error with a JSON-RPC `code`. */
export type CallerAsk = (
  method: McpAskMethod,
  params: Record<string, unknown>,
  signal: AbortSignal,
) => Promise<Record<string, unknown>>;

/** Answers what the call's MCP server asks its client, while the call is awaited here. */
export function answerAsks(
  deps: { nc: NatsConnection; client: Client; log: Logger; channel: string },
  call: { project: string; ask?: CallerAsk | undefined; signal: AbortSignal },
  id: string,
): Subscription | undefined {
  const { nc, client, log, channel } = deps;
  const ask = call.ask;
  if (!ask) return undefined;
  const subject = client.subjects.mcpAsk({
    project: call.project,
    channel,
    toolCallId: id,
  });
  const asklog = log.child({ project: call.project, tool_call_id: id });
  return subscribeGuarded(nc, subject, {
    log: asklog,
    onMessage: (msg) => {
      void (async () => {
        let reply;
        try {
          const req = decodeMessage('mcp_ask', msg.data);
          reply = { v: 1 as const, result: await ask(req.method, req.params, call.signal) };
        } catch (err) {
          const code = (err as { code?: unknown }).code;
          const message = (err as Error).message.replace(/^MCP error -?\d+: /, '');
          asklog.debug({ err }, 'the MCP client did not answer what the server asked');
          reply = {
            v: 1 as const,
            error: {
              code: Number.isSafeInteger(code) ? (code as number) : -32603,
              message,
              ...(err instanceof NoClientToAsk ? { data: { reason: MCP_ASK_NO_CLIENT } } : {}),
            },
          };
        }
        msg.respond(encodeMessage('mcp_rpc_reply', reply));
      })();
    },
  });
}
