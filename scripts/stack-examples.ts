// What `pnpm stack` offers beyond the embedded defaults, for trying things on this machine: the
// MCP servers and HTTP tools a developer runs on loopback are reachable (the tools service refuses
// private addresses otherwise, as a deployment should), and the example catalog of MCP servers
// (examples/mcp-catalog) is offered. A value set in config.toml or the environment is kept:
// `CG__TOOLS__ALLOWED_PRIVATE_HOSTS='[]' pnpm stack` refuses loopback as a deployment does.
import { join } from 'node:path';
import type { Config } from '@toolmesh/config';

export interface LocalSettings {
  /** CG__* variables for every service. */
  env: Record<string, string>;
  /** What the stack says about them. */
  lines: string[];
}

export function localStackSettings(
  config: Config,
  checkout: string,
  given: Readonly<Record<string, string | undefined>>,
): LocalSettings {
  const env: Record<string, string> = {};
  const lines: string[] = [];
  if (
    given['CG__TOOLS__ALLOWED_PRIVATE_HOSTS'] === undefined &&
    config.tools.allowed_private_hosts.length === 0
  ) {
    env['CG__TOOLS__ALLOWED_PRIVATE_HOSTS'] = JSON.stringify(['127.0.0.1', 'localhost']);
    lines.push(
      "HTTP tools and MCP servers may reach 127.0.0.1 (a local stack; CG__TOOLS__ALLOWED_PRIVATE_HOSTS='[]' refuses it)",
    );
  }
  if (given['CG__CATALOG__DIR'] === undefined && config.catalog.dir === '') {
    env['CG__CATALOG__DIR'] = join(checkout, 'examples', 'mcp-catalog');
    lines.push(`MCP server catalog: ${env['CG__CATALOG__DIR']} (GET /v1/catalog)`);
  }
  return { env, lines };
}
