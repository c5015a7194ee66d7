// A mesh call's answer as an MCP tools/call result: the result card's content as MCP content
// (an MCP tool's upstream answer as its server gave it), and the facade's own error results.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ToolResultContent } from '@toolmesh/protocol';
import { artifactLinks } from './resources.ts';

/**
 * A result card as MCP content: the result as JSON text, and as structuredContent. An MCP tool's
 * result (`{content, structured_content?}`, the upstream server's answer) is given back as that
 * server gave it: its content blocks and its structuredContent, which its outputSchema describes.
 */
export function toCallToolResult(
  content: ToolResultContent,
  toolCallId: string,
  origin?: string,
): CallToolResult {
  const meta = { 'io.toolmesh/tool-call-id': toolCallId };
  if (content.status === 'succeeded') {
    const result = content.result;
    const upstream = origin === 'mcp' ? mcpResultOf(result) : undefined;
    if (upstream) return { ...upstream, ...inputRequiredIn(result), _meta: meta };
    const text = typeof result === 'string' ? result : JSON.stringify(result ?? null);
    const structured =
      typeof result === 'object' && result !== null && !Array.isArray(result)
        ? (result as Record<string, unknown>)
        : { result: result ?? null };
    return {
      content: [{ type: 'text', text }, ...artifactLinks(result)],
      structuredContent: structured,
      _meta: meta,
    };
  }
  const error = content.error ?? { code: content.status, message: `the call ${content.status}` };
  // An MCP tool's own isError answer: its content blocks as the server sent them.
  const upstream =
    origin === 'mcp' && error.code === 'tool_error' ? mcpResultOf(error.details) : undefined;
  if (upstream) return { isError: true, ...upstream, _meta: meta };
  return {
    isError: true,
    content: [{ type: 'text', text: `${error.code}: ${error.message}` }],
    structuredContent: { status: content.status, error },
    _meta: meta,
  };
}

/**
 * The server's `input_required` answer to a 2026-07-28 call (SEP-2322), kept in the card by the
 * tools service: it rides on the result as `mcpInputRequired` for modern-input.ts to hand on.
 */
export const INPUT_REQUIRED_KEY = 'mcpInputRequired';
function inputRequiredIn(result: unknown): Record<string, unknown> {
  const ir = (result as Record<string, unknown>)['mcp_input_required'];
  return typeof ir === 'object' && ir !== null ? { [INPUT_REQUIRED_KEY]: ir } : {};
}

/** The upstream answer inside an MCP tool's card, if the card holds one. */
function mcpResultOf(
  result: unknown,
): Pick<CallToolResult, 'content' | 'structuredContent'> | undefined {
  if (typeof result !== 'object' || result === null) return undefined;
  const { content, structured_content: structured } = result as Record<string, unknown>;
  if (!Array.isArray(content)) return undefined;
  return {
    content: content as CallToolResult['content'],
    ...(typeof structured === 'object' && structured !== null && !Array.isArray(structured)
      ? { structuredContent: structured as Record<string, unknown> }
      : {}),
  };
}

export const errorResult = (code: string, message: string, extra: object = {}): CallToolResult => ({
  isError: true,
  content: [{ type: 'text', text: `${code}: ${message}` }],
  structuredContent: { status: 'failed', error: { code, message, ...extra } },
});

/** What run returns for a call whose wait was detached (never sent to a client). */
export const DETACHED: CallToolResult = errorResult('detached', 'the wait was detached');
