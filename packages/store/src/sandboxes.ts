// Sandbox sessions (state.sandboxes): which live sandbox serves a project's session key.
import type { Db } from './db.ts';

export interface SandboxRecord {
  sandbox_id: string;
  provider: 'local' | 'e2b';
  project_id: string;
  agent_id: string | null;
  session_key: string;
  state: 'active' | 'reaping' | 'destroyed' | 'error';
  created_at: Date;
  last_used_at: Date;
}

export interface SandboxesRepo {
  /** The active sandbox of a session, touching its last use. */
  findActive(projectId: string, sessionKey: string): Promise<SandboxRecord | undefined>;
  /** Records a new session sandbox; undefined when another one won the race for the key. */
  claim(r: {
    sandboxId: string;
    provider: 'local' | 'e2b';
    projectId: string;
    agentId: string | null;
    sessionKey: string;
  }): Promise<SandboxRecord | undefined>;
  /** Marks a sandbox gone (its provider no longer knows it). */
  markDestroyed(sandboxId: string): Promise<void>;
  /** A project's sandboxes, most recently used first, with their expiry and lock. */
  listByProject(
    projectId: string,
    filter: { state?: SandboxRecord['state'] | undefined; limit: number },
  ): Promise<SandboxListing[]>;
}

/** A row as the api lists it: the record plus its expiry, lock and reaping state. */
export interface SandboxListing extends SandboxRecord {
  idle_expires_at: Date | null;
  hard_expires_at: Date | null;
  lock_owner: string | null;
  lock_expires_at: Date | null;
  reap_attempts: number;
  last_error: string | null;
}

const COLUMNS =
  'sandbox_id, provider, project_id, agent_id, session_key, state, created_at, last_used_at';

export function createSandboxesRepo(db: Db): SandboxesRepo {
  return {
    findActive: async (projectId, sessionKey) =>
      (
        await db.query<SandboxRecord>(
          'sandboxes_find_active',
          `UPDATE state.sandboxes SET last_used_at = now()
           WHERE project_id = $1 AND md5(session_key) = md5($2) AND session_key = $2 AND state = 'active'
           RETURNING ${COLUMNS}`,
          [projectId, sessionKey],
        )
      )[0],
    claim: async (r) =>
      (
        await db.query<SandboxRecord>(
          'sandboxes_claim',
          `INSERT INTO state.sandboxes (sandbox_id, provider, project_id, agent_id, session_key)
           VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (project_id, md5(session_key)) WHERE state = 'active' DO NOTHING
           RETURNING ${COLUMNS}`,
          [r.sandboxId, r.provider, r.projectId, r.agentId, r.sessionKey],
        )
      )[0],
    markDestroyed: async (sandboxId) => {
      await db.query(
        'sandboxes_mark_destroyed',
        `UPDATE state.sandboxes SET state = 'destroyed' WHERE sandbox_id = $1`,
        [sandboxId],
      );
    },
    listByProject: (projectId, filter) =>
      db.query<SandboxListing>(
        'sandboxes_list_by_project',
        `SELECT ${COLUMNS}, idle_expires_at, hard_expires_at, lock_owner, lock_expires_at,
           reap_attempts, last_error
         FROM state.sandboxes
         WHERE project_id = $1 AND ($2::text IS NULL OR state = $2)
         ORDER BY last_used_at DESC, sandbox_id
         LIMIT $3`,
        [projectId, filter.state ?? null, filter.limit],
      ),
  };
}
