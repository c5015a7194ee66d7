// The npm package the MCP catalog tests import: the env-reporting stdio server of
// @toolmesh/testing bundled into one file and published to a local npm registry, and its
// server.json `packages` entry (a secret and a plain environment variable, a named argument).
import { readFile } from 'node:fs/promises';
import {
  bundleMcpStdioServer,
  MCP_ENV_SERVER_PATH,
  type McpStdioBundle,
  type PackageIndex,
} from '@toolmesh/testing';

export const ENV_MCP_PKG = '@acme/env-mcp';

/** Publishes ENV_MCP_PKG 1.0.0 to `index`; the bundle is the caller's to clean up. */
export async function publishEnvMcp(index: PackageIndex): Promise<McpStdioBundle> {
  const bundle = await bundleMcpStdioServer({ input: MCP_ENV_SERVER_PATH });
  await index.addNpmPackage(ENV_MCP_PKG, '1.0.0', {
    'package.json': JSON.stringify({
      name: ENV_MCP_PKG,
      version: '1.0.0',
      type: 'module',
      bin: { 'env-mcp': 'server.mjs' },
    }),
    'server.mjs': await readFile(bundle.file, 'utf8'),
  });
  return bundle;
}

/** The server.json `packages` entry of ENV_MCP_PKG, run with `--mode <mode>`. */
export function envMcpNpmPackage(mode: string, extra: Record<string, unknown> = {}) {
  return {
    registryType: 'npm',
    identifier: ENV_MCP_PKG,
    version: '1.0.0',
    ...extra,
    transport: { type: 'stdio' },
    packageArguments: [{ type: 'named', name: '--mode', value: mode }],
    environmentVariables: [
      { name: 'CATALOG_TOKEN', description: 'API token', isRequired: true, isSecret: true },
      { name: 'GREETING', description: 'How to greet', default: 'hello' },
    ],
  };
}
