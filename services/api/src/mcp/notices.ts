// What a project's MCP servers notify (resource updated, resource or prompt list changed, log
// messages), as the tools service publishes it on `ctl.mcp.<server>.notify`, fanned out to this
// instance's sessions and listen streams of that project. One core NATS subscription per project
// while something of it listens; nothing of another project ever reaches its listeners, since the
// subject carries the project. `notice()` says what one endpoint's client gets of a notice: the
// server's own names on its endpoint (and nothing of another server), prefixed names on the
// project's facade (`toolmesh://mcp-servers/<server>/<uri>`, logger `<server>`), as federated.ts.
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { subscribeGuarded } from '@toolmesh/bus';
import { decodeMessage, type McpNotice, type Subjects } from '@toolmesh/protocol';

export type NoticeListener = (server: string, n: McpNotice) => void;

export interface UpstreamNotices {
  /** Calls `fn` with each notice of the project's MCP servers until the returned stop is called. */
  watch(project: string, fn: NoticeListener): () => void;
  close(): void;
}

export function createUpstreamNotices(o: {
  nc: NatsConnection;
  subjects: Subjects;
  logger: Logger;
}): UpstreamNotices {
  const log = o.logger.child({ component: 'mcp-notices' });
  const projects = new Map<string, { sub: Subscription; listeners: Set<NoticeListener> }>();
  return {
    watch(project, fn) {
      let p = projects.get(project);
      if (!p) {
        const listeners = new Set<NoticeListener>();
        const sub = subscribeGuarded(o.nc, o.subjects.mcpNotifyFilter(project), {
          log: log.child({ project }),
          onMessage: (msg) => {
            const parsed = o.subjects.parse(msg.subject);
            if (parsed.kind !== 'ctl' || parsed.component !== 'mcp') return;
            const n = decodeMessage('mcp_notice', msg.data);
            for (const l of listeners) l(parsed.server, n);
          },
        });
        p = { sub, listeners };
        projects.set(project, p);
      }
      const entry = p;
      entry.listeners.add(fn);
      return () => {
        entry.listeners.delete(fn);
        if (entry.listeners.size === 0 && projects.get(project) === entry) {
          projects.delete(project);
          entry.sub.unsubscribe();
        }
      };
    },
    close() {
      for (const p of projects.values()) p.sub.unsubscribe();
      projects.clear();
    },
  };
}

/** The prefix of the facade's names for its MCP servers' resources (federated.ts). */
export const FEDERATED_RESOURCE_PREFIX = 'toolmesh://mcp-servers/';

/**
 * A notice as the client of one endpoint sees it: `endpointServer` is the server whose own
 * endpoint it is, undefined for the project's facade. Undefined when it is not for this endpoint.
 */
export function noticeFor(
  endpointServer: string | undefined,
  server: string,
  n: McpNotice,
): McpNotice | undefined {
  if (endpointServer !== undefined) return endpointServer === server ? n : undefined;
  switch (n.method) {
    case 'notifications/resources/updated': {
      const uri = n.params['uri'];
      if (typeof uri !== 'string') return undefined;
      return { ...n, params: { ...n.params, uri: `${FEDERATED_RESOURCE_PREFIX}${server}/${uri}` } };
    }
    case 'notifications/message': {
      const logger = n.params['logger'];
      return {
        ...n,
        params: {
          ...n.params,
          logger: typeof logger === 'string' ? `${server}__${logger}` : server,
        },
      };
    }
    case 'notifications/resources/list_changed':
    case 'notifications/prompts/list_changed':
      return n;
    default:
      return n.method satisfies never;
  }
}

/** RFC 5424 severities as MCP names them, least severe first. */
const LOG_LEVELS = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
];

/** What a client that never set a log level is sent: another client's level does not move it. */
export const DEFAULT_LOG_LEVEL = 'info';

/** Is a log message of `level` sent to a client whose threshold is `threshold`? */
export function logPasses(level: unknown, threshold: string): boolean {
  const at = LOG_LEVELS.indexOf(typeof level === 'string' ? level : '');
  const min = LOG_LEVELS.indexOf(threshold);
  return at >= 0 && at >= min;
}
