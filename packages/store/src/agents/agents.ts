// Agents (resource.agents) and the tools attached to each (resource.agent_tools, with a
// per-agent config). Profiles and tools are named by the caller and resolved here inside the
// project, so an agent can never point at another project's profile or tool.
import type { Db } from '../core/db.ts';

export interface AgentRecord {
  project_id: string;
  agent_id: string;
  name: string;
  /** The profile's name, or null when the agent has none. */
  profile: string | null;
  created_at: Date;
  updated_at: Date;
}

/** A registry tool as attached to one agent. */
export interface AgentToolRecord {
  name: string;
  target: string;
  description: string;
  category: string;
  parameters: Record<string, unknown>;
  enabled: boolean;
  config: Record<string, unknown>;
  attached_at: Date;
}

export interface NewAgent {
  agentId: string;
  name: string;
  /** A profile name in the same project. */
  profile?: string | null | undefined;
}

export interface AgentPatch {
  name?: string | undefined;
  /** `null` detaches the profile. */
  profile?: string | null | undefined;
}

export type AgentWrite =
  | { ok: true; agent: AgentRecord }
  | { ok: false; reason: 'conflict' | 'not_found' | 'unknown_profile' };

export type AttachTool =
  { ok: true; tool: AgentToolRecord } | { ok: false; reason: 'no_agent' | 'no_tool' | 'conflict' };

export interface AgentsRepo {
  create(projectId: string, a: NewAgent): Promise<AgentWrite>;
  get(projectId: string, agentId: string): Promise<AgentRecord | undefined>;
  /** Ordered by id; `after` is the last id of the previous page. */
  list(
    projectId: string,
    f: { limit: number; after?: string | undefined; profile?: string | undefined },
  ): Promise<AgentRecord[]>;
  update(projectId: string, agentId: string, p: AgentPatch): Promise<AgentWrite>;
  delete(projectId: string, agentId: string): Promise<boolean>;
  /** Undefined when the agent does not exist. */
  listTools(projectId: string, agentId: string): Promise<AgentToolRecord[] | undefined>;
  attachTool(
    projectId: string,
    agentId: string,
    tool: string,
    config: Record<string, unknown>,
  ): Promise<AttachTool>;
  /** Replaces the config; undefined when the agent does not exist or the tool is not attached. */
  configureTool(
    projectId: string,
    agentId: string,
    tool: string,
    config: Record<string, unknown>,
  ): Promise<AgentToolRecord | undefined>;
  /** False when the agent does not exist or the tool is not attached to it. */
  detachTool(projectId: string, agentId: string, tool: string): Promise<boolean>;
}

const AGENT = `a.project_id, a.agent_id, a.name, p.name AS profile, a.created_at, a.updated_at`;
export const AGENT_TOOL = `t.name, t.target, t.description, t.category, t.parameters, t.enabled,
  at.config, at.created_at AS attached_at`;

const sqlState = (err: unknown): unknown =>
  typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
const FOREIGN_KEY_VIOLATION = '23503';

export function createAgentsRepo(db: Db): AgentsRepo {
  const exists = async (projectId: string, agentId: string) =>
    (
      await db.query(
        'agents_exists',
        'SELECT 1 FROM resource.agents WHERE project_id = $1 AND agent_id = $2',
        [projectId, agentId],
      )
    ).length === 1;
  const get: AgentsRepo['get'] = async (projectId, agentId) =>
    (
      await db.query<AgentRecord>(
        'agents_get',
        `SELECT ${AGENT} FROM resource.agents a
           LEFT JOIN resource.profiles p ON p.profile_id = a.profile_id
         WHERE a.project_id = $1 AND a.agent_id = $2`,
        [projectId, agentId],
      )
    )[0];

  return {
    create: async (projectId, a) => {
      const rows = await db
        .query<AgentRecord>(
          'agents_create',
          // One statement: the profile is looked up in this project and the insert skipped when
          // a named profile is missing. A profile deleted meanwhile trips the foreign key.
          `WITH p AS (SELECT profile_id, name FROM resource.profiles WHERE project_id = $1 AND name = $4),
           a AS (
             INSERT INTO resource.agents (project_id, agent_id, name, profile_id)
             SELECT $1, $2, $3, (SELECT profile_id FROM p)
             WHERE $4::text IS NULL OR EXISTS (SELECT 1 FROM p)
             ON CONFLICT (project_id, agent_id) DO NOTHING
             RETURNING *)
           SELECT ${AGENT} FROM a LEFT JOIN p ON true`,
          [projectId, a.agentId, a.name, a.profile ?? null],
        )
        .catch((err: unknown) => {
          if (sqlState(err) === FOREIGN_KEY_VIOLATION) return [];
          throw err;
        });
      if (rows[0]) return { ok: true, agent: rows[0] };
      return {
        ok: false,
        reason: (await exists(projectId, a.agentId)) ? 'conflict' : 'unknown_profile',
      };
    },
    get,
    list: (projectId, f) =>
      db.query<AgentRecord>(
        'agents_list',
        `SELECT ${AGENT} FROM resource.agents a
           LEFT JOIN resource.profiles p ON p.profile_id = a.profile_id
         WHERE a.project_id = $1 AND ($3::text IS NULL OR a.agent_id > $3)
           AND ($4::text IS NULL OR p.name = $4)
         ORDER BY a.agent_id LIMIT $2`,
        [projectId, f.limit, f.after ?? null, f.profile ?? null],
      ),
    update: async (projectId, agentId, patch) => {
      const rows = await db
        .query<{ agent_id: string }>(
          'agents_update',
          // `profile` may be set to null, so "absent" travels as a separate flag ($4).
          `WITH p AS (SELECT profile_id FROM resource.profiles WHERE project_id = $1 AND name = $5)
           UPDATE resource.agents SET
             name = coalesce($3, name),
             profile_id = CASE WHEN $4::boolean THEN (SELECT profile_id FROM p) ELSE profile_id END,
             updated_at = now()
           WHERE project_id = $1 AND agent_id = $2
             AND (NOT $4::boolean OR $5::text IS NULL OR EXISTS (SELECT 1 FROM p))
           RETURNING agent_id`,
          [
            projectId,
            agentId,
            patch.name ?? null,
            patch.profile !== undefined,
            patch.profile ?? null,
          ],
        )
        .catch((err: unknown) => {
          if (sqlState(err) === FOREIGN_KEY_VIOLATION) return [];
          throw err;
        });
      const agent = rows[0] ? await get(projectId, agentId) : undefined;
      if (agent) return { ok: true, agent };
      return {
        ok: false,
        reason: (await exists(projectId, agentId)) ? 'unknown_profile' : 'not_found',
      };
    },
    delete: async (projectId, agentId) =>
      (
        await db.query(
          'agents_delete',
          'DELETE FROM resource.agents WHERE project_id = $1 AND agent_id = $2 RETURNING agent_id',
          [projectId, agentId],
        )
      ).length === 1,
    listTools: async (projectId, agentId) => {
      // One statement: the agent's row is joined in, so an agent without tools gives one row
      // of nulls and a missing agent none.
      const rows = await db.query<AgentToolRecord | { [K in keyof AgentToolRecord]: null }>(
        'agents_list_tools',
        `SELECT ${AGENT_TOOL} FROM resource.agents a
           LEFT JOIN (resource.agent_tools at JOIN resource.tools t ON t.tool_id = at.tool_id)
             ON at.project_id = a.project_id AND at.agent_id = a.agent_id
         WHERE a.project_id = $1 AND a.agent_id = $2 ORDER BY t.name`,
        [projectId, agentId],
      );
      if (rows.length === 0) return undefined;
      return rows.filter((r): r is AgentToolRecord => r.name !== null);
    },
    attachTool: async (projectId, agentId, tool, config) => {
      const rows = await db
        .query<AgentToolRecord>(
          'agents_attach_tool',
          `WITH t AS (SELECT * FROM resource.tools WHERE project_id = $1 AND name = $3),
           at AS (
             INSERT INTO resource.agent_tools (project_id, agent_id, tool_id, config)
             SELECT $1, $2, t.tool_id, $4 FROM t
             WHERE EXISTS (SELECT 1 FROM resource.agents WHERE project_id = $1 AND agent_id = $2)
             ON CONFLICT (project_id, agent_id, tool_id) DO NOTHING
             RETURNING *)
           SELECT ${AGENT_TOOL} FROM at JOIN t ON t.tool_id = at.tool_id`,
          [projectId, agentId, tool, config],
        )
        .catch((err: unknown) => {
          // The agent or the tool was deleted between the lookup and the insert.
          if (sqlState(err) === FOREIGN_KEY_VIOLATION) return [];
          throw err;
        });
      if (rows[0]) return { ok: true, tool: rows[0] };
      if (!(await exists(projectId, agentId))) return { ok: false, reason: 'no_agent' };
      const known = await db.query(
        'agents_tool_exists',
        'SELECT 1 FROM resource.tools WHERE project_id = $1 AND name = $2',
        [projectId, tool],
      );
      return { ok: false, reason: known.length === 1 ? 'conflict' : 'no_tool' };
    },
    configureTool: async (projectId, agentId, tool, config) =>
      (
        await db.query<AgentToolRecord>(
          'agents_configure_tool',
          `UPDATE resource.agent_tools at SET config = $4 FROM resource.tools t
           WHERE at.project_id = $1 AND at.agent_id = $2
             AND t.tool_id = at.tool_id AND t.project_id = $1 AND t.name = $3
           RETURNING ${AGENT_TOOL}`,
          [projectId, agentId, tool, config],
        )
      )[0],
    detachTool: async (projectId, agentId, tool) =>
      (
        await db.query(
          'agents_detach_tool',
          `DELETE FROM resource.agent_tools at USING resource.tools t
           WHERE at.project_id = $1 AND at.agent_id = $2
             AND t.tool_id = at.tool_id AND t.project_id = $1 AND t.name = $3
           RETURNING at.tool_id`,
          [projectId, agentId, tool],
        )
      ).length === 1,
  };
}
