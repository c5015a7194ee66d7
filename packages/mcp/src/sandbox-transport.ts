// An MCP stdio transport whose process is a tenant's program inside a sandbox. The SDK's own
// StdioClientTransport spawns a plain child of this process; a tenant's server must never run
// that way, so this transport starts it with `Sandbox.interact` (the sandbox's file system,
// egress allow-list, limits and process-group kill) and speaks newline-delimited JSON-RPC over
// the pipes the sandbox hands back.
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { ExecResult, InteractiveProcess, Sandbox } from '@toolmesh/sandbox';

export interface SandboxStdioOptions {
  readonly sandbox: Sandbox;
  readonly command: string;
  readonly args?: readonly string[];
  /** Laid over the sandbox's scrubbed base environment. */
  readonly env?: Readonly<Record<string, string>>;
  /** Workdir-relative working directory. */
  readonly cwd?: string;
  /** Bytes of stderr kept for error messages (the tail). */
  readonly stderrBytes?: number;
}

export interface SandboxStdioTransport extends Transport {
  /** The tail of the server's stderr. */
  stderrTail(): string;
  /** The first bytes the server wrote to stderr: why it died, usually ("Cannot find module"). */
  stderrHead(): string;
  /** How the process ended, once it has. */
  readonly exit: ExecResult | undefined;
}

/** How long a server gets to exit on its own after its stdin closes before it is killed. */
const EXIT_GRACE_MS = 2_000;

export function createSandboxStdioTransport(o: SandboxStdioOptions): SandboxStdioTransport {
  const buffer = new ReadBuffer();
  const keep = o.stderrBytes ?? 8 * 1024;
  let stderr = '';
  let head = '';
  let proc: InteractiveProcess | undefined;
  let exit: ExecResult | undefined;
  let closed = false;

  const transport: SandboxStdioTransport = {
    get exit() {
      return exit;
    },
    stderrTail: () => stderr,
    stderrHead: () => head,
    async start() {
      if (proc) throw new Error('the sandbox stdio transport is already started');
      proc = await o.sandbox.interact(
        { argv: [o.command, ...(o.args ?? [])] },
        {
          ...(o.env ? { env: o.env } : {}),
          ...(o.cwd ? { cwd: o.cwd } : {}),
          onStdout: (chunk) => {
            buffer.append(Buffer.from(chunk));
            for (;;) {
              let message: JSONRPCMessage | null;
              try {
                message = buffer.readMessage();
              } catch (err) {
                // A line that is not JSON-RPC (a server printing to stdout): reported, skipped.
                transport.onerror?.(err as Error);
                continue;
              }
              if (message === null) break;
              transport.onmessage?.(message);
            }
          },
          onStderr: (chunk) => {
            const text = Buffer.from(chunk).toString('utf8');
            if (head.length < keep) head = (head + text).slice(0, keep);
            stderr = (stderr + text).slice(-keep);
          },
        },
      );
      proc.wait().then(
        (result) => {
          exit = result;
          finish();
        },
        (err: unknown) => {
          transport.onerror?.(err as Error);
          finish();
        },
      );
    },
    async send(message) {
      if (!proc || closed) throw new Error('the MCP server process is not running');
      await proc.write(serializeMessage(message));
    },
    async close() {
      if (!proc || closed) {
        finish();
        return;
      }
      const p = proc;
      await p.closeStdin().catch(() => undefined);
      let timer: NodeJS.Timeout | undefined;
      const ended = await Promise.race([
        p.wait().then(() => true),
        new Promise<boolean>(
          (resolve) => (timer = setTimeout(() => resolve(false), EXIT_GRACE_MS)),
        ),
      ]).catch(() => false);
      clearTimeout(timer);
      if (!ended) await p.kill().catch(() => undefined);
      finish();
    },
  };

  function finish(): void {
    if (closed) return;
    closed = true;
    buffer.clear();
    transport.onclose?.();
  }

  return transport;
}
