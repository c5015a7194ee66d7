// The sandbox a call runs in, settled through the session registry (state.sandboxes).
//
// Which sandbox (sandbox.reuse_mode):
// - `project_agent`: calls of one project, agent and session id share one sandbox and its files.
//   A call of an agent without a session id uses that agent's session `default` (so an LLM that
//   never names a session still keeps its files between calls). A call with neither agent nor
//   session id has nobody to share with and gets a sandbox of its own, as in `none`.
// - `none`: every call gets a fresh sandbox, destroyed when the call (or the async task or job
//   it started) ends.
// Either way the sandbox is a row in state.sandboxes, so a service that dies mid-call leaves
// nothing the sandbox-reaper will not find: a call's own sandbox has the key `call:<tool call id>`.
//
// The lock: the call holding a session writes its tool call id and an expiry (its time left plus
// sandbox.lock_margin_ms) into the row. Another call polls with a short backoff for up to
// sandbox.lock_wait_ms and then fails with code `busy`; a lock past its expiry (its holder died)
// is taken over. The first two calls of a session race on the unique index: both create a
// sandbox, one row wins, the loser destroys its own and waits for the winner's lock.
//
// Lifetime: the idle TTL restarts whenever a call or a background task lets go of the sandbox;
// the hard TTL is fixed at creation. A command's timeout has nothing to do with either. While
// an async task, service or job runs in a sandbox its lock is released (other calls may use the
// session beside it), and the reaper leaves a sandbox with a running head alone until its hard
// expiry.
//
// Quota: a call that needs a new sandbox is refused with `quota_exceeded` while its project has
// quotas.sandboxes_per_project live ones (counted in Postgres, over every instance); a call into
// a session that already has its sandbox is not.
import { setTimeout as sleep } from 'node:timers/promises';
import { ToolError } from '@toolmesh/protocol';
import type { Sandbox, SessionKey } from '@toolmesh/sandbox';
import type { SandboxRecord } from '@toolmesh/store';
import type { ToolContext } from '@toolmesh/tool-service';
import type { SkillsDeps } from './deps.ts';
import { admitted, quotaError } from './quota.ts';

/** The session of an agent's calls that name none. */
export const DEFAULT_SESSION = 'default';

export interface SessionOptions {
  reuseMode: 'none' | 'project_agent';
  idleTtlSec: number;
  hardTtlSec: number;
  /** How long a call waits for a session another call holds before it fails `busy`. */
  lockWaitMs: number;
  /** Added to the call's time left to make the lock's expiry. */
  lockMarginMs: number;
}

export interface Lease {
  sandbox: Sandbox;
  /** The shared session's key (`<agent>/<session>`); null for a sandbox of the call's own. */
  sessionKey: string | null;
  /**
   * The call is done but a background process it started goes on in the sandbox: the session
   * is unlocked for other calls; `release()` follows when the process ends.
   */
  detach(): Promise<void>;
  /**
   * Ends the use. The call's own sandbox is destroyed; a session's is unlocked (if this call
   * still held it) and its idle TTL starts again.
   */
  release(): Promise<void>;
}

/** What a call's sandbox is keyed by in the registry and named by in the provider. */
interface Scope {
  registryKey: string;
  sessionKey: string | null;
  key: SessionKey;
}

export function scopeOf(
  mode: SessionOptions['reuseMode'],
  ctx: Pick<ToolContext, 'project' | 'agentId' | 'toolCallId'>,
  sessionId: string | undefined,
): Scope {
  const agent = ctx.agentId ?? '-';
  const session =
    mode === 'none' ? undefined : (sessionId ?? (ctx.agentId ? DEFAULT_SESSION : undefined));
  if (session === undefined) {
    // ':' is not in the id alphabet, so no agent/session pair can collide with a call's key.
    return {
      registryKey: `call:${ctx.toolCallId}`,
      sessionKey: null,
      key: { project: ctx.project, agent, session: ctx.toolCallId },
    };
  }
  const sessionKey = `${agent}/${session}`;
  return { registryKey: sessionKey, sessionKey, key: { project: ctx.project, agent, session } };
}

const POLL_FIRST_MS = 20;
const POLL_MAX_MS = 250;
/** Rounds that are not waiting (a lost creation race, a retired or vanished sandbox). */
const MAX_SETTLE_ROUNDS = 6;

export async function sandboxFor(
  deps: SkillsDeps,
  ctx: ToolContext,
  sessionId: string | undefined,
): Promise<Lease> {
  const o = deps.sessions;
  const provider = deps.sandboxes;
  const registry = deps.store.sandboxes;
  const scope = scopeOf(o.reuseMode, ctx, sessionId);
  const log = ctx.logger.child({ session_key: scope.registryKey });
  const owner = ctx.toolCallId;
  const started = Date.now();
  const waitUntil = started + Math.min(o.lockWaitMs, Math.max(0, ctx.deadline - started));
  const lockMs = () => Math.max(1, ctx.deadline - Date.now()) + o.lockMarginMs;
  let delay = POLL_FIRST_MS;
  let rounds = 0;
  let recreated = false;

  for (;;) {
    const got = await registry.lock({
      projectId: ctx.project,
      sessionKey: scope.registryKey,
      owner,
      lockMs: lockMs(),
    });
    if (got.outcome === 'busy') {
      if (Date.now() >= waitUntil) {
        throw new ToolError(
          `sandbox session ${scope.registryKey} is busy: another call holds it, and it did not ` +
            `free up within ${o.lockWaitMs} ms`,
          {
            code: 'busy',
            details: {
              session_key: scope.registryKey,
              waited_ms: Date.now() - started,
              lock_expires_at: got.lockExpiresAt.toISOString(),
            },
          },
        );
      }
      await sleep(Math.min(delay, waitUntil - Date.now()), undefined, { signal: ctx.signal });
      delay = Math.min(delay * 2, POLL_MAX_MS);
      continue;
    }
    if (++rounds > MAX_SETTLE_ROUNDS) {
      throw new Error(`could not settle a sandbox for session ${scope.registryKey}`);
    }
    if (got.outcome === 'locked') {
      const r = got.record;
      if (got.tookOverFrom !== null) {
        log.warn(
          { sandbox_id: r.sandbox_id, previous_owner: got.tookOverFrom },
          'took over an expired session lock',
        );
      }
      if (got.hardExpired || r.provider !== provider.kind) {
        // Past its hard expiry, or made by a provider this service no longer runs: the reaper
        // destroys it, and the session starts again in a new sandbox.
        await registry.retire(r.sandbox_id, owner);
        log.info(
          { sandbox_id: r.sandbox_id, hard_expired: got.hardExpired, provider: r.provider },
          'session sandbox retired',
        );
        continue;
      }
      const sandbox = await provider.open(r.sandbox_id);
      if (sandbox) return leaseOf(deps, ctx, scope, r, sandbox);
      // The provider no longer has it (lost with its host, deleted by hand): forget it and make
      // another, once. A command is never re-run because of this: nothing has run yet.
      await registry.markDestroyed(r.sandbox_id);
      if (recreated) {
        throw new Error(`the sandbox of session ${scope.registryKey} vanished twice in a row`);
      }
      recreated = true;
      log.warn({ sandbox_id: r.sandbox_id }, 'session sandbox is gone; creating a new one');
      continue;
    }
    // [quotas] sandboxes_per_project: a look first, so a project at its limit costs no sandbox;
    // the claim below counts again under the project's lock and decides.
    const limit = deps.quotas.sandboxesPerProject;
    if (limit > 0) {
      const current = await deps.store.quotas.count('sandboxes', ctx.project);
      if (current >= limit) {
        throw quotaError({ admitted: false, quota: 'sandboxes', limit, current });
      }
    }
    const sandbox = await provider.create({ key: scope.key });
    const claimed = await deps.store.quotas
      .claimSandbox(
        {
          sandboxId: sandbox.id,
          provider: provider.kind,
          projectId: ctx.project,
          agentId: ctx.agentId ?? null,
          sessionKey: scope.registryKey,
          owner,
          lockMs: lockMs(),
          idleTtlSec: o.idleTtlSec,
          hardTtlSec: o.hardTtlSec,
        },
        limit,
      )
      .then(admitted)
      .catch(async (err: unknown) => {
        // Refused by the quota, or the insert failed: nothing has run in it.
        await sandbox.destroy().catch(() => undefined);
        throw err;
      });
    if (claimed) {
      log.debug({ sandbox_id: sandbox.id }, 'sandbox created');
      return leaseOf(deps, ctx, scope, claimed, sandbox);
    }
    // Another call created the session's sandbox at the same moment: use that one.
    await sandbox.destroy();
  }
}

function leaseOf(
  deps: SkillsDeps,
  ctx: ToolContext,
  scope: Scope,
  record: SandboxRecord,
  sandbox: Sandbox,
): Lease {
  const registry = deps.store.sandboxes;
  const { idleTtlSec } = deps.sessions;
  const id = record.sandbox_id;
  const log = ctx.logger.child({ sandbox_id: id, session_key: scope.registryKey });
  let detached = false;
  let released = false;
  const unlock = async () => {
    if (!(await registry.release(id, ctx.toolCallId, idleTtlSec))) {
      log.warn('the session lock had expired and was taken over before this call let go');
    }
  };
  return {
    sandbox,
    sessionKey: scope.sessionKey,
    detach: async () => {
      if (detached || released) return;
      detached = true;
      await unlock();
    },
    release: async () => {
      if (released) return;
      released = true;
      if (scope.sessionKey === null) {
        try {
          await sandbox.destroy();
        } catch (err) {
          // The reaper tries again, with backoff, until it is gone.
          await registry.retire(id);
          throw err;
        }
        await registry.markDestroyed(id);
        return;
      }
      if (detached) await registry.touch(id, idleTtlSec);
      else await unlock();
      await sandbox.close();
    },
  };
}
