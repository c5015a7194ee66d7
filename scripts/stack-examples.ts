// What `pnpm stack` offers beyond the embedded defaults, for trying things on this machine. The
// tools service refuses private addresses, loopback included, as every deployment does: a stack
// serves several projects, and loopback holds its own api, console, health ports, NATS and
// Postgres, which one project's HTTP tool or MCP server must not reach. `--allow-loopback` lets
// them reach 127.0.0.1 and localhost, for servers a developer runs beside the stack (added to
// what config.toml or the environment lists). The example catalog of MCP servers
// (examples/mcp-catalog) is offered unless a catalog folder is set.
import { join } from 'node:path';
import type { Config } from '@toolmesh/config';

/** The hosts `--allow-loopback` adds to [tools] allowed_private_hosts. */
export const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost'] as const;

export interface LocalSettings {
  /** CG__* variables for every service. */
  env: Record<string, string>;
  /** What the stack says about them. */
  lines: string[];
}

export interface LocalOptions {
  /** `pnpm stack --allow-loopback`. */
  allowLoopback: boolean;
}

export function localStackSettings(
  config: Config,
  checkout: string,
  given: Readonly<Record<string, string | undefined>>,
  opts: LocalOptions,
): LocalSettings {
  const env: Record<string, string> = {};
  const lines: string[] = [];
  const listed = config.tools.allowed_private_hosts;
  if (opts.allowLoopback) {
    const hosts = [...new Set([...listed, ...LOOPBACK_HOSTS])];
    env['CG__TOOLS__ALLOWED_PRIVATE_HOSTS'] = JSON.stringify(hosts);
    lines.push(
      `HTTP tools and MCP servers of every project may reach ${hosts.join(', ')}, this stack's own ports included (--allow-loopback; without it loopback is refused, as in a deployment)`,
    );
  } else {
    const reach =
      listed.length === 0
        ? 'may not reach loopback or other private addresses'
        : `may reach no private address but ${listed.join(', ')} ([tools] allowed_private_hosts)`;
    lines.push(
      `HTTP tools and MCP servers ${reach}, as in a deployment (\`pnpm stack --allow-loopback\` lets them reach servers on this machine)`,
    );
  }
  if (given['CG__CATALOG__DIR'] === undefined && config.catalog.dir === '') {
    env['CG__CATALOG__DIR'] = join(checkout, 'examples', 'mcp-catalog');
    lines.push(`MCP server catalog: ${env['CG__CATALOG__DIR']} (GET /v1/catalog)`);
  }
  return { env, lines };
}
