// Installed environments nothing uses any more (state.skill_envs): the dependencies of a skill
// version that was deleted, the npm package of an MCP server no server of its project runs, and
// everything of a deleted project. Their rows are deleted first (so no new session mounts them)
// and then the build sandboxes holding their files are destroyed. Only environments last
// written `[reaper] unused_envs_after_sec` ago are taken, so a server deleted and imported again
// at once keeps its install. On e2b an environment lives in each sandbox's own VM and goes with
// it: only its row is deleted.
import type { Logger } from 'pino';
import type { SkillsStore } from '@toolmesh/store';
import type { Destroyers } from './providers.ts';

export interface UnusedEnvsOptions {
  store: SkillsStore;
  destroyers: Destroyers;
  olderThanMs: number;
  batchSize: number;
  logger: Logger;
}

export interface UnusedEnvsPass {
  /** Rows deleted. */
  deleted: number;
  /** Build sandboxes destroyed with them. */
  destroyed: number;
  /** Build sandboxes whose destroy failed (their folders are left; logged). */
  failed: number;
}

export async function collectUnusedEnvs(o: UnusedEnvsOptions): Promise<UnusedEnvsPass> {
  const rows = await o.store.skillEnvs.deleteUnused(o.olderThanMs, o.batchSize);
  const pass: UnusedEnvsPass = { deleted: rows.length, destroyed: 0, failed: 0 };
  for (const row of rows) {
    const log = o.logger.child({
      project: row.project_id,
      skill: row.skill_name,
      version: row.version,
      provider: row.provider,
      sandbox_id: row.sandbox_id,
    });
    const destroyer = row.provider === 'local' ? o.destroyers.get('local') : undefined;
    if (!row.sandbox_id || !destroyer) {
      log.info('unused environment forgotten');
      continue;
    }
    try {
      await destroyer.destroy(row.sandbox_id);
      pass.destroyed++;
      log.info('unused environment removed');
    } catch (err) {
      pass.failed++;
      log.warn({ err }, 'removing an unused environment failed; its folder is left');
    }
  }
  return pass;
}
