// How a server process ended, told in an error: its exit code or signal and the first lines of
// what it printed on stderr (where runtimes say what went wrong).
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { McpClientError } from './errors.ts';
import type { SandboxStdioTransport } from './sandbox-transport.ts';

export function describeEnd(kind: string, transport: Transport): string {
  if (kind !== 'stdio') return `the ${kind} connection closed`;
  const t = transport as SandboxStdioTransport;
  const exit = t.exit;
  const how = exit
    ? exit.exitCode !== null
      ? `exited with code ${exit.exitCode}`
      : `was killed by ${exit.signal ?? 'a signal'}`
    : 'closed its pipes';
  return `the MCP server process ${how}${stderrNote(transport)}`;
}

export function stderrNote(transport: Transport): string {
  const t = transport as Partial<SandboxStdioTransport>;
  const text = summarizeStderr(t.stderrHead?.() ?? '', t.stderrTail?.() ?? '');
  return text ? ` (stderr: ${text})` : '';
}

/**
 * What a failed server said: its first lines (where Node, Python and most runtimes say what
 * went wrong, e.g. "Error: Cannot find module ..."), whole lines up to ~600 characters, then,
 * when more came, its last line.
 */
export function summarizeStderr(head: string, tail: string, max = 600): string {
  const lines = head
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== '');
  const shown: string[] = [];
  let size = 0;
  for (const line of lines) {
    const cut = line.length > max ? `${line.slice(0, max)}…` : line;
    if (shown.length > 0 && size + cut.length > max) break;
    shown.push(cut);
    size += cut.length + 3;
  }
  if (shown.length === 0) return '';
  const last = tail
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .at(-1);
  const more = shown.length < lines.length || tail !== head;
  const end = more && last !== undefined && !shown.includes(last) ? ` … ${last.slice(0, 200)}` : '';
  return shown.join(' | ') + end;
}

/** A lost stdio connection says how the process ended. */
export function withExit(err: McpClientError, kind: string, transport: Transport): McpClientError {
  if (err.reason !== 'connection_lost' || kind !== 'stdio') return err;
  return new McpClientError('connection_lost', `${err.message}: ${describeEnd(kind, transport)}`, {
    cause: err.cause,
  });
}
