// The stdio fixture server as one self-contained file. Sandbox reads are an allow-list that
// leaves out the checkout (its source and node_modules), so the server and the SDK it imports
// are bundled into a folder of their own, readable by the sandbox's uid; tests pass that folder
// as `sandbox.read_paths` and run `node <file>` inside the sandbox.
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MCP_STDIO_SERVER_PATH } from './mcp-http-server.ts';

export interface McpStdioBundle {
  /** The folder to allow for reading (`sandbox.read_paths`). */
  readonly dir: string;
  /** The bundled server: `node <file> [tool ...]`. */
  readonly file: string;
  cleanup(): Promise<void>;
}

/** The env fixture server's source (mcp-env-server.ts): bundle it with `{ input }`. */
export const MCP_ENV_SERVER_PATH = join(import.meta.dirname, 'mcp-env-server.ts');

export async function bundleMcpStdioServer(
  options: { input?: string } = {},
): Promise<McpStdioBundle> {
  const dir = await mkdtemp(join(tmpdir(), 'toolmesh-mcp-fixture-'));
  await chmod(dir, 0o755); // mkdtemp makes it 0700: the sandbox uid could not enter it
  const file = join(dir, 'mcp-stdio-server.mjs');
  // Imported here, not at the top: the stack imports this package and never bundles anything.
  const { rolldown } = await import('rolldown');
  const bundle = await rolldown({
    input: options.input ?? MCP_STDIO_SERVER_PATH,
    platform: 'node',
    logLevel: 'silent',
  });
  try {
    await bundle.write({ file, format: 'esm' });
  } finally {
    await bundle.close();
  }
  await chmod(file, 0o644);
  return { dir, file, cleanup: () => rm(dir, { recursive: true, force: true }) };
}
