// A stdio MCP server built with the official SDK that tells what its environment holds: the tests
// publish it, bundled, as an npm package and run it inside a sandbox the way an imported
// server.json package runs. `whoami` answers with a digest of CATALOG_TOKEN (proof the secret
// reached it), the token itself (which redaction must hide from cards), GREETING, and argv.
import { createHash } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const server = new McpServer({ name: 'toolmesh-fixture-env', version: '1.0.0' });
server.registerTool(
  'whoami',
  { description: 'Tells what the server was started with', inputSchema: {} },
  () => {
    const token = process.env['CATALOG_TOKEN'] ?? '';
    const facts = {
      token_sha256: createHash('sha256').update(token).digest('hex'),
      token,
      greeting: process.env['GREETING'] ?? null,
      args: process.argv.slice(2),
    };
    return {
      content: [{ type: 'text', text: JSON.stringify(facts) }],
    };
  },
);
await server.connect(new StdioServerTransport());
