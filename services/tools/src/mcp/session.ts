// The sandbox a stdio MCP server runs in: a session of the server's project, recorded in
// state.sandboxes under the key `mcp:<server>@<instance>` (':' and '@' are outside the id
// alphabet, so no agent session can collide), so the sandbox-reaper finds it if this instance
// dies. Each instance runs its own copy of the server (connections are per instance). The lock
// is let go right after the claim: the idle TTL restarts whenever a call uses the server, and a
// sandbox idle past it is reaped, which ends the server; the next call starts a new one.
import type { Logger } from 'pino';
import type { Sandbox, SandboxProvider } from '@toolmesh/sandbox';
import type { SkillsStore } from '@toolmesh/store';

export interface SessionDeps {
  store: SkillsStore;
  /** The provider, made on first use: a service without stdio servers never needs one. */
  sandboxes(): Promise<SandboxProvider>;
  instanceId: string;
  idleTtlSec: number;
  hardTtlSec: number;
  logger: Logger;
}

export interface ServerSession {
  readonly sandbox: Sandbox;
  /** Restarts the idle TTL (at most once a minute: a call is not a database write). */
  touch(): void;
  /** Kills the server's sandbox and marks it destroyed. */
  destroy(): Promise<void>;
}

const TOUCH_EVERY_MS = 60_000;
const CLAIM_LOCK_MS = 30_000;

export async function openServerSession(
  deps: SessionDeps,
  project: string,
  server: string,
): Promise<ServerSession> {
  const registry = deps.store.sandboxes;
  const provider = await deps.sandboxes();
  const sessionKey = `mcp:${server}@${deps.instanceId}`;
  const owner = `tools@${deps.instanceId}`;
  const log = deps.logger.child({ project, mcp_server: server, session_key: sessionKey });
  let sandbox: Sandbox | undefined;
  let id: string | undefined;
  const got = await registry.lock({ projectId: project, sessionKey, owner, lockMs: CLAIM_LOCK_MS });
  if (got.outcome === 'locked' && !got.hardExpired) {
    sandbox = await provider.open(got.record.sandbox_id);
    if (sandbox) id = got.record.sandbox_id;
    else await registry.markDestroyed(got.record.sandbox_id);
  } else if (got.outcome === 'locked') {
    await registry.retire(got.record.sandbox_id, owner);
  }
  if (!sandbox) {
    sandbox = await provider.create({
      key: { project, agent: '-', session: `mcp-${server}` },
    });
    const claimed = await registry
      .claim({
        sandboxId: sandbox.id,
        provider: provider.kind,
        projectId: project,
        agentId: null,
        sessionKey,
        owner,
        lockMs: CLAIM_LOCK_MS,
        idleTtlSec: deps.idleTtlSec,
        hardTtlSec: deps.hardTtlSec,
      })
      .catch(async (err: unknown) => {
        await sandbox?.destroy().catch(() => undefined);
        throw err;
      });
    if (!claimed) {
      // Only this instance uses this key; a lost race means a stale row: let the reaper have it.
      await sandbox.destroy();
      throw new Error(`the sandbox session ${sessionKey} is claimed by another sandbox`);
    }
    id = sandbox.id;
    log.info({ sandbox_id: id }, 'sandbox for an MCP stdio server created');
  }
  await registry.release(id!, owner, deps.idleTtlSec);
  const sb = sandbox;
  let lastTouch = Date.now();
  let destroying: Promise<void> | undefined;
  return {
    sandbox: sb,
    touch: () => {
      if (Date.now() - lastTouch < TOUCH_EVERY_MS) return;
      lastTouch = Date.now();
      registry
        .touch(sb.id, deps.idleTtlSec)
        .catch((err: unknown) => log.warn({ err }, 'could not touch the MCP sandbox'));
    },
    destroy: () =>
      (destroying ??= (async () => {
        try {
          await sb.destroy();
          await registry.markDestroyed(sb.id);
        } catch (err) {
          await registry.retire(sb.id).catch(() => undefined);
          log.warn(
            { err, sandbox_id: sb.id },
            'could not destroy the MCP sandbox; left to the reaper',
          );
        }
      })()),
  };
}
