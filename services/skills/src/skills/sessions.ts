// The sandbox a call runs in. Without a session id every call gets a fresh sandbox, destroyed
// when the call ends; with one, calls of the same project, agent and session share a sandbox
// (its files stay) recorded in state.sandboxes. Expiry, locks and the reaper come with session
// reuse; until then a session sandbox lives until it is destroyed.
import type { Sandbox } from '@toolmesh/sandbox';
import type { ToolContext } from '@toolmesh/tool-service';
import type { SkillsDeps } from './deps.ts';

export interface Lease {
  sandbox: Sandbox;
  /** Ends the call's use: a per-call sandbox is destroyed, a session sandbox only released. */
  release(): Promise<void>;
}

export async function sandboxFor(
  deps: SkillsDeps,
  ctx: ToolContext,
  sessionId: string | undefined,
): Promise<Lease> {
  const agent = ctx.agentId ?? '-';
  if (sessionId === undefined) {
    const sandbox = await deps.sandboxes.create({
      key: { project: ctx.project, agent, session: ctx.toolCallId },
    });
    return { sandbox, release: () => sandbox.destroy() };
  }
  const sessionKey = `${agent}/${sessionId}`;
  for (let attempt = 0; attempt < 3; attempt++) {
    const known = await deps.store.sandboxes.findActive(ctx.project, sessionKey);
    if (known) {
      const sandbox = await deps.sandboxes.open(known.sandbox_id);
      if (sandbox) return { sandbox, release: () => sandbox.close() };
      // The provider no longer has it (a reaped or lost sandbox): forget it and make another.
      await deps.store.sandboxes.markDestroyed(known.sandbox_id);
      continue;
    }
    const sandbox = await deps.sandboxes.create({
      key: { project: ctx.project, agent, session: sessionId },
    });
    const claimed = await deps.store.sandboxes.claim({
      sandboxId: sandbox.id,
      provider: deps.sandboxes.kind,
      projectId: ctx.project,
      agentId: ctx.agentId ?? null,
      sessionKey,
    });
    if (claimed) return { sandbox, release: () => sandbox.close() };
    // Another call created the session's sandbox at the same moment: use that one.
    await sandbox.destroy();
  }
  throw new Error(`could not settle a sandbox for session ${sessionKey}`);
}
