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
 * A service of the mesh. Every service provisions the streams, the lease bucket and its durable
 * consumers at start (idempotently), so each needs the JetStream API of the account; subjects stay
 * inside the root. The sandbox reaper never talks to NATS and gets nothing.
 */
export function servicePermissions(root: string, user: ServiceUser): SubjectPermissions {
  const r = assertRoot(root);
  const jetStream = ['$JS.API.>', '$JS.ACK.>', `$KV.${r}_leases.>`];
  const mesh = `${r}.${PROTOCOL_VERSION}.>`;
  const inbox = `${SERVICE_INBOX}.>`;
  switch (user) {
    case ServiceUser.sandboxReaper:
      return { pub: [], sub: [] };
    case ServiceUser.api:
    case ServiceUser.agentWorker:
    case ServiceUser.skills:
    case ServiceUser.tools:
      return { pub: [mesh, inbox, ...jetStream], sub: [mesh, inbox, `$KV.${r}_leases.>`] };
    case ServiceUser.admin:
      // Scripts and tests: the whole root and every stream of the account (reset, cleanup).
      return { pub: [`${r}.>`, inbox, '$JS.>', '$KV.>'], sub: [`${r}.>`, inbox, '$KV.>'] };
    default:
      return user satisfies never;
  }
}
