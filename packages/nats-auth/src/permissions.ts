// What each NATS user may publish and subscribe to. Subjects are scoped to the deployment's
// subject root (so a test run's users cannot touch another root's streams) and built from the
// protocol's grammar; the lists are allow-lists, so anything unnamed (`$SYS.>`, another root,
// the JetStream API for project credentials) is refused by the server.
import { assertId, assertRoot, IdKind, PROTOCOL_VERSION } from '@toolmesh/protocol';
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
  const p = `${assertRoot(root)}.${PROTOCOL_VERSION}.${assertId(IdKind.project, project)}.*`;
  return {
    pub: [`${p}.cmd.tool.>`, `${p}.cmd.sys.cancel`],
    sub: [`${p}.evt.>`, `${p}.str.>`, `${inboxPrefix}.>`],
  };
}

/**
 * A service of the mesh: the subjects it publishes and listens to, and the JetStream API (every
 * service provisions the streams, the lease bucket and its durable consumers at start,
 * idempotently, and consumes through pull requests). Replies to core requests go to the
 * requester's `_INBOX`. The sandbox reaper never talks to NATS and gets nothing.
 */
export function servicePermissions(root: string, user: ServiceUser): SubjectPermissions {
  const r = assertRoot(root);
  const v = `${r}.${PROTOCOL_VERSION}`;
  const leases = `$KV.${r}_leases.>`;
  const jetStream = ['$JS.API.>', '$JS.ACK.>', leases];
  const inbox = `${SERVICE_INBOX}.>`;
  // JetStream's announcement of a new stream: a consumer of every project's command stream
  // (tool services, the agent worker) starts on a new project's stream at once.
  const streamCreated = '$JS.EVENT.ADVISORY.STREAM.CREATED.*';
  const registryChanged = `${v}.*.sys.evt.sys.registry.changed`;
  // A tool service publishes a call again once its approval is decided and its decider died
  // before publishing it, or it timed out (the approval gate's scan, which runs in every tool
  // service): `cmd.tool.>`, on any target the scan finds.
  const toolService = {
    pub: [`${v}.*.*.evt.tool.>`, `${v}.*.*.cmd.agent.*.wakeup`, `${v}.*.*.cmd.tool.>`],
    sub: [`${v}.*.*.cmd.sys.cancel`, registryChanged, streamCreated],
  };
  switch (user) {
    case ServiceUser.sandboxReaper:
      return { pub: [], sub: [] };
    case ServiceUser.api:
      // Tool calls, cancels and wakeups; task-cancel and MCP-refresh requests; task events of
      // the tasks it cancels; registry changes and key revocations (every api instance drops a revoked key it cached). It watches
      // results, progress, agent facts, chunks and those two system events.
      return {
        pub: [
          `${v}.*.*.cmd.>`,
          `${v}.*.*.ctl.>`,
          // A task the api cancels, and the thread's next message it starts, are announced by it.
          `${v}.*.*.evt.agent.*.task`,
          registryChanged,
          `${v}.*.sys.evt.sys.key.revoked`,
          inbox,
          ...jetStream,
        ],
        // And what MCP servers ask the clients of the calls it waits for (sampling, elicitation),
        // and what they notify its sessions of (resource updates, list changes, log messages).
        sub: [
          `${v}.*.*.evt.>`,
          `${v}.*.*.str.>`,
          `${v}.*.*.ctl.ask.*.request`,
          `${v}.*.sys.ctl.mcp.*.notify`,
          inbox,
          leases,
        ],
      };
    case ServiceUser.agentWorker:
      return {
        pub: [
          `${v}.*.*.cmd.tool.>`,
          `${v}.*.*.cmd.sys.cancel`,
          `${v}.*.*.evt.agent.>`,
          `${v}.*.*.str.agent.>`,
          inbox,
          ...jetStream,
        ],
        sub: [inbox, leases, streamCreated],
      };
    case ServiceUser.skills:
      // Async tasks are cancelled by a request to the instance that owns them.
      return {
        pub: [...toolService.pub, `${v}.*.*.ctl.task.*.cancel`, inbox, ...jetStream],
        sub: [...toolService.sub, `${v}.*.*.ctl.task.*.cancel`, inbox, leases],
      };
    case ServiceUser.tools:
      // MCP discovery answers refresh requests and announces what it found; passthrough
      // requests (resources, prompts...) are answered over the pooled connections.
      return {
        pub: [
          ...toolService.pub,
          registryChanged,
          `${v}.*.*.ctl.ask.*.request`,
          // What an MCP server notifies on a pooled connection, for the api's sessions.
          `${v}.*.sys.ctl.mcp.*.notify`,
          inbox,
          ...jetStream,
        ],
        sub: [
          ...toolService.sub,
          `${v}.*.*.ctl.mcp.*.refresh`,
          `${v}.*.*.ctl.mcp.*.rpc`,
          // An input request of a call it runs was answered (the answer is in Postgres).
          `${v}.*.*.ctl.input.*.answered`,
          inbox,
          leases,
        ],
      };
    case ServiceUser.admin:
      // Scripts and tests: the whole root and every stream of the account (reset, cleanup).
      return {
        pub: [`${r}.>`, inbox, '$JS.>', '$KV.>'],
        sub: [`${r}.>`, inbox, '$KV.>', streamCreated],
      };
    default:
      return user satisfies never;
  }
}
