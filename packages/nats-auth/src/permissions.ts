// What each NATS user may publish and subscribe to. Subjects are scoped to the deployment's
// subject root (so a test run's users cannot touch another root's streams) and derived from the
// protocol's own subject builders (`Subjects` filters, the lease bucket's name): what a
// publisher is allowed is the same pattern its envelope (`toolCallEnvelope`) is built on. The
// lists are allow-lists, so anything unnamed (`$SYS.>`, another root, the JetStream API for
// project credentials) is refused by the server.
import { assertId, createNames, createSubjects, IdKind } from '@toolmesh/protocol';
import { ServiceUser } from './keys.ts';

export interface SubjectPermissions {
  pub: string[];
  sub: string[];
}

/** Where service users receive replies (the client default). */
export const SERVICE_INBOX = '_INBOX';

/**
 * A project credential's private inbox prefix: replies (e.g. JetStream publish acks) to one
 * credential land where no other credential may subscribe.
 */
export function credentialInboxPrefix(project: string, credentialId: string): string {
  return `_INBOX_${assertId(IdKind.project, project)}_${credentialId.replace(/-/g, '')}`;
}

/**
 * An external publisher of one project: tool calls and cancels of that project (every channel),
 * its events and stream chunks, its own inbox. Nothing of the JetStream API: publishing onto a
 * stream's subject is all JetStream it needs.
 */
export function projectCredentialPermissions(
  root: string,
  project: string,
  inboxPrefix: string,
): SubjectPermissions {
  const s = createSubjects(root);
  return {
    pub: [s.allToolCallsFilter(project), s.cancelFilter(project)],
    sub: [...s.projectActivityFilters(project), `${inboxPrefix}.>`],
  };
}

/**
 * A service of the mesh: the subjects it publishes and listens to, and the JetStream API (every
 * service provisions the streams, the lease bucket and its durable consumers at start,
 * idempotently, and consumes through pull requests). Replies to core requests go to the
 * requester's `_INBOX`. The sandbox reaper never talks to NATS and gets nothing.
 */
export function servicePermissions(root: string, user: ServiceUser): SubjectPermissions {
  const s = createSubjects(root);
  const leases = `$KV.${createNames(root).leaseBucket}.>`;
  const jetStream = ['$JS.API.>', '$JS.ACK.>', leases];
  const inbox = `${SERVICE_INBOX}.>`;
  // JetStream's announcement of a new stream: a consumer of every project's command stream
  // (tool services, the agent worker) starts on a new project's stream at once.
  const streamCreated = '$JS.EVENT.ADVISORY.STREAM.CREATED.*';
  const registryChanged = s.registryChangedFilter();
  // A tool service publishes a call again once its approval is decided and its decider died
  // before publishing it, or it timed out (the approval gate's scan, which runs in every tool
  // service): `cmd.tool.>`, on any target the scan finds.
  const toolService = {
    pub: [s.toolEventsFilter(), s.agentWakeupFilter(), s.allToolCallsFilter()],
    sub: [s.cancelFilter(), registryChanged, streamCreated],
  };
  switch (user) {
    case ServiceUser.sandboxReaper:
      return { pub: [], sub: [] };
    case ServiceUser.api:
      // Tool calls, cancels and wakeups; task-cancel and MCP-refresh requests; task events of
      // the tasks it cancels; registry changes and key revocations (every api instance drops a
      // revoked key it cached). It watches results, progress, agent facts, chunks and those two
      // system events.
      return {
        pub: [
          s.allCommandsFilter(),
          s.allControlFilter(),
          // A task the api cancels, and the thread's next message it starts, are announced by it.
          s.agentEventFilter('task'),
          registryChanged,
          s.keyRevokedFilter(),
          inbox,
          ...jetStream,
        ],
        // And what MCP servers ask the clients of the calls it waits for (sampling, elicitation),
        // and what they notify its sessions of (resource updates, list changes, log messages).
        sub: [
          s.allEventsFilter(),
          s.allStreamsFilter(),
          s.mcpAskFilter(),
          s.allMcpNotifyFilter(),
          inbox,
          leases,
        ],
      };
    case ServiceUser.agentWorker:
      return {
        pub: [
          s.allToolCallsFilter(),
          s.cancelFilter(),
          s.agentEventFilter(),
          s.agentChunkFilter(),
          inbox,
          ...jetStream,
        ],
        sub: [inbox, leases, streamCreated],
      };
    case ServiceUser.skills:
      // Async tasks are cancelled by a request to the instance that owns them.
      return {
        pub: [...toolService.pub, s.taskCancelFilter(), inbox, ...jetStream],
        sub: [...toolService.sub, s.taskCancelFilter(), inbox, leases],
      };
    case ServiceUser.tools:
      // MCP discovery answers refresh requests and announces what it found; passthrough
      // requests (resources, prompts...) are answered over the pooled connections.
      return {
        pub: [
          ...toolService.pub,
          registryChanged,
          s.mcpAskFilter(),
          // What an MCP server notifies on a pooled connection, for the api's sessions.
          s.allMcpNotifyFilter(),
          inbox,
          ...jetStream,
        ],
        sub: [
          ...toolService.sub,
          s.mcpRefreshFilter(),
          s.mcpRpcFilter(),
          // An input request of a call it runs was answered (the answer is in Postgres).
          s.inputAnsweredFilter(),
          inbox,
          leases,
        ],
      };
    case ServiceUser.admin:
      // Scripts and tests: the whole root and every stream of the account (reset, cleanup).
      return {
        pub: [s.rootFilter(), inbox, '$JS.>', '$KV.>'],
        sub: [s.rootFilter(), inbox, '$KV.>', streamCreated],
      };
    default:
      return user satisfies never;
  }
}
