// What a test makes the everything fixture server notify, to every session it has: a resource
// updated (only if some session subscribed to it, as a server that tracks subscriptions), its
// resource or prompt list changed, a log message outside any request, a tool added (its
// tools/list_changed; sessions opened later have the tool too).
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { LoggingLevel } from '@modelcontextprotocol/sdk/types.js';
import type { EverythingState } from './mcp-everything-features.ts';

export interface EverythingTriggers {
  /** notifications/resources/updated to every session, if a session subscribed to `uri`. */
  resourceUpdated(uri: string): Promise<void>;
  resourcesChanged(): Promise<void>;
  promptsChanged(): Promise<void>;
  /** notifications/message to every session (logger `conformance-test-server`). */
  log(level: LoggingLevel, data: string): Promise<void>;
  /** A tool `name` that answers `added: <name>`, on every session. */
  addTool(name: string): Promise<void>;
}

export function createEverythingTriggers(
  servers: () => McpServer[],
  state: EverythingState,
): { triggers: EverythingTriggers; apply(server: McpServer): void } {
  const added: string[] = [];
  const register = (mcp: McpServer, name: string) => {
    mcp.registerTool(name, { description: `Added by the test: ${name}` }, () => ({
      content: [{ type: 'text', text: `added: ${name}` }],
    }));
  };
  const each = async (fn: (mcp: McpServer) => Promise<unknown>) => {
    await Promise.all(servers().map((s) => fn(s).catch(() => undefined)));
  };
  return {
    apply: (mcp) => {
      for (const name of added) register(mcp, name);
    },
    triggers: {
      resourceUpdated: async (uri) => {
        if (state.subscriptions.has(uri)) await each((s) => s.server.sendResourceUpdated({ uri }));
      },
      resourcesChanged: () => each((s) => s.server.sendResourceListChanged()),
      promptsChanged: () => each((s) => s.server.sendPromptListChanged()),
      log: (level, data) =>
        each((s) =>
          s.server.sendLoggingMessage({ level, logger: 'conformance-test-server', data }),
        ),
      addTool: async (name) => {
        added.push(name);
        // registerTool sends tools/list_changed on a connected server.
        await each((s) => Promise.resolve(register(s, name)));
      },
    },
  };
}
