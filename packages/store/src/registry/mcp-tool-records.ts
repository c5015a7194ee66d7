// What an MCP server's discovery found and what a sync of it did: shared by the servers'
// repository (mcp-servers.ts) and the sync of their tools (mcp-tools-sync.ts).

/** One tool as a discovery found it, already mapped to a registry token. */
export interface DiscoveredTool {
  /** The token after `<server>.`: an id. */
  token: string;
  /** The name the server knows it by (what tools/call is sent). */
  mcpName: string;
  description: string;
  parameters: Record<string, unknown>;
  /** The `$schema` the server declared for its input schema, kept out of `parameters`. */
  schemaDialect?: string;
  /** The server's annotation hints for the tool (readOnlyHint and the like). */
  annotations?: Record<string, boolean>;
  /** The server's JSON Schema of the tool's structured result. */
  outputSchema?: Record<string, unknown>;
}

/** What a sync did, by full tool name. */
export interface McpSyncOutcome {
  added: string[];
  updated: string[];
  /** Vanished from the server's listing: disabled. */
  disabled: string[];
  /** Taken by a tool that is not this server's (another origin or server). */
  refused: string[];
  /** Their definition changed: held (calls fail definition_changed) until approved. */
  held: string[];
  toolCount: number;
}

/** `spec` of an mcp tool row. `vanished` marks a tool disabled because the server dropped it. */
export interface McpToolSpec {
  server: string;
  tool: string;
  /** The JSON Schema dialect the server declared (`$schema`), when it declared one. */
  schema?: string;
  vanished?: boolean;
  /** Disabled because its server was switched off; switching the server on enables it again. */
  server_disabled?: boolean;
}
