// A stdio MCP server built with the official SDK, run by the tests inside a sandbox:
// `node <this file> [tool ...]` serves the fixture tools (all of them when none are named).
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { registerFixtureTools, type FixtureState } from './mcp-fixture-tools.ts';

const state: FixtureState = { canceled: 0 };
const server = new McpServer({ name: 'toolmesh-fixture-stdio', version: '1.0.0' });
const only = process.argv.slice(2);
registerFixtureTools(server, state, only.length > 0 ? only : undefined);
await server.connect(new StdioServerTransport());
