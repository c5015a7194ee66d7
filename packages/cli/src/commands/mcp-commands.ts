// The `mcp` (alias `mcp-servers`) commands: a project's MCP servers added, imported from a
// server.json or the operator's catalog, listed, refreshed, switched off and on, removed, and the
// project served as an MCP server on stdio; `catalog list` beside them.
import type { Command } from 'commander';
import {
  collect,
  mcpAdd,
  mcpDisable,
  mcpEnable,
  mcpList,
  mcpRefresh,
  mcpRemove,
  type McpAddFlags,
} from './mcp.ts';
import { catalogList, mcpImport, type McpImportFlags } from './mcp-import.ts';
import { mcpServe, type McpServeFlags } from './mcp-serve.ts';
import type { Run } from './threads.ts';

export function addMcpCommands(program: Command, run: Run): void {
  const mcp = program
    .command('mcp')
    .alias('mcp-servers')
    .description("the project's MCP servers, and the project served as one (serve)");
  mcp
    .command('import')
    .description(
      'import an MCP server from an MCP Registry server.json (a file) or the operator catalog (an entry name): a remote becomes an http server, an npm package a stdio server in the sandbox; again to update',
    )
    .argument('<file|catalog-name>', 'a server.json file, or a name `toolmesh catalog list` shows')
    .option('--name <name>', 'the server name in the project (default: from the entry name)')
    .option(
      '--secret <input=secret>',
      'the project secret a declared environment variable, header or {placeholder} takes (repeatable)',
      collect,
    )
    .option('--var <input=value>', 'a plain value for a declared input (repeatable)', collect)
    .option('--use <remote|package>', 'which transport when the entry has both')
    .option('--index <n>', 'which remote or package (0-based)')
    .action(run((ctx, source: string, f: McpImportFlags) => mcpImport(ctx, source, f)));
  mcp
    .command('serve')
    .description(
      "serve the project's tools as an MCP server on stdio (for MCP clients that start a command); relays to the api's /v1/projects/<p>/mcp with the api key",
    )
    .option('--agent <id>', "only this agent's tool set")
    .option(
      '--server <name>',
      "only this MCP server's tools, under its own names (/v1/projects/<p>/mcp-servers/<name>/mcp)",
    )
    .action(run((ctx, f: McpServeFlags) => mcpServe(ctx, f)));
  mcp
    .command('add')
    .description(
      'register an MCP server: a URL (streamable HTTP) or a command run inside a sandbox (stdio); prints the tools found',
    )
    .argument('<name>', 'the server name: its tools become <name>.<tool>')
    .argument('<url|command>', 'https://... or the program to run')
    .argument('[args...]', "the command's arguments (put -- before ones starting with -)")
    .option('--header <name=value>', 'a header for every request (repeatable)', collect)
    .option('--bearer-secret <secret>', 'send a project secret as the bearer token')
    .option('--header-secret <header=secret>', 'send a project secret in this header')
    .option('--env <name=value>', 'an environment variable of the command (repeatable)', collect)
    .action(
      run((ctx, name: string, target: string, args: string[], f: McpAddFlags) =>
        mcpAdd(ctx, name, target, args, f),
      ),
    );
  mcp
    .command('list')
    .description('the MCP servers with their state, tool count and last error')
    .action(run((ctx) => mcpList(ctx)));
  mcp
    .command('refresh')
    .description(
      'list the server again: new tools added, changed ones updated, vanished ones disabled',
    )
    .argument('<name>')
    .action(run((ctx, name: string) => mcpRefresh(ctx, name)));
  mcp
    .command('disable')
    .description(
      'switch the server off without deleting it: its tools are disabled and its connections closed',
    )
    .argument('<name>')
    .action(run((ctx, name: string) => mcpDisable(ctx, name)));
  mcp
    .command('enable')
    .description('switch a disabled server on again: its tools come back and it is listed again')
    .argument('<name>')
    .action(run((ctx, name: string) => mcpEnable(ctx, name)));
  mcp
    .command('remove')
    .description('delete the server and its tools')
    .argument('<name>')
    .action(run((ctx, name: string) => mcpRemove(ctx, name)));

  program
    .command('catalog')
    .description("the operator's catalog of MCP servers a project may import")
    .command('list')
    .description('every catalog entry: name, version, transports and required inputs')
    .action(run((ctx) => catalogList(ctx)));
}
