// What an MCP server notifies on a pooled connection (a resource it was asked to watch changed,
// its resource or prompt list changed, a log message outside any call) goes to the api's sessions
// of the connection's project on `ctl.mcp.<server>.notify` (core NATS: a session that is not
// listening has nothing to catch up on). The api filters per session (what it subscribed to, its
// log level). A tools/list_changed is not published: it refreshes the registry (discovery.ts),
// whose change reaches every session once the rows are there.
import type { Logger } from 'pino';
import type { Bus } from '@toolmesh/bus';
import type { McpNotification } from '@toolmesh/mcp';
import { McpNoticeMethod, encodeMessage } from '@toolmesh/protocol';

export type NoticePublisher = (project: string, server: string, n: McpNotification) => void;

const isNotice = (method: string): method is McpNoticeMethod =>
  Object.hasOwn(McpNoticeMethod, method);

export function createNoticePublisher(o: { bus: Bus; logger: Logger }): NoticePublisher {
  const log = o.logger.child({ component: 'mcp-notify' });
  return (project, server, n) => {
    if (!isNotice(n.method)) return;
    try {
      const data = encodeMessage('mcp_notice', { v: 1, method: n.method, params: n.params ?? {} });
      const max = o.bus.nc.info?.max_payload ?? Infinity;
      if (data.length > max) {
        log.warn(
          { project, mcp_server: server, method: n.method, bytes: data.length },
          "an MCP server's notification is larger than the message bus carries; dropped",
        );
        return;
      }
      o.bus.nc.publish(o.bus.subjects.mcpNotify({ project, server }), data);
    } catch (err) {
      log.warn(
        { err, project, mcp_server: server, method: n.method },
        'notification not passed on',
      );
    }
  };
}
