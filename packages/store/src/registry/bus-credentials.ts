// Metadata of the per-project NATS credentials (resource.bus_credentials). The seed is never
// here; the revoked rows are the account's revocation list.
import type { Db } from '../core/db.ts';

export interface BusCredential {
  credentialId: string;
  projectId: string;
  name: string;
  publicKey: string;
  inboxPrefix: string;
  createdAt: Date;
  revokedAt: Date | null;
}

export interface BusCredentialsRepo {
  insert(c: Omit<BusCredential, 'createdAt' | 'revokedAt'>): Promise<BusCredential>;
  list(projectId: string): Promise<BusCredential[]>;
  /** Marks it revoked (once); undefined when the project has no such credential. */
  revoke(projectId: string, credentialId: string): Promise<BusCredential | undefined>;
  /** Every revoked credential's public key and revocation time, for the account JWT. */
  revocations(): Promise<Record<string, number>>;
  /**
   * Runs `push` with the revocation list under a lock every api instance takes: two revokes at
   * once push one after the other, each with a list that includes the other's, so an older list
   * never lands after a newer one.
   */
  pushRevocations(push: (list: Record<string, number>) => Promise<void>): Promise<void>;
}

interface Row {
  credential_id: string;
  project_id: string;
  name: string;
  public_key: string;
  inbox_prefix: string;
  created_at: Date;
  revoked_at: Date | null;
}

const REVOCATIONS_SQL = `SELECT public_key, ceil(extract(epoch FROM revoked_at))::bigint AS at
  FROM resource.bus_credentials WHERE revoked_at IS NOT NULL`;

async function listRevocations(db: Db): Promise<Record<string, number>> {
  const rows = await db.query<{ public_key: string; at: string }>(
    'bus_credentials_revocations',
    REVOCATIONS_SQL,
    [],
  );
  return Object.fromEntries(rows.map((r) => [r.public_key, Number(r.at)]));
}

const COLUMNS = 'credential_id, project_id, name, public_key, inbox_prefix, created_at, revoked_at';

function fromRow(r: Row): BusCredential {
  return {
    credentialId: r.credential_id,
    projectId: r.project_id,
    name: r.name,
    publicKey: r.public_key,
    inboxPrefix: r.inbox_prefix,
    createdAt: r.created_at,
    revokedAt: r.revoked_at,
  };
}

export function createBusCredentialsRepo(db: Db): BusCredentialsRepo {
  return {
    insert: async (c) => {
      const rows = await db.query<Row>(
        'bus_credentials_insert',
        `INSERT INTO resource.bus_credentials
           (credential_id, project_id, name, public_key, inbox_prefix)
         VALUES ($1, $2, $3, $4, $5) RETURNING ${COLUMNS}`,
        [c.credentialId, c.projectId, c.name, c.publicKey, c.inboxPrefix],
      );
      return fromRow(rows[0] as Row);
    },
    list: async (projectId) =>
      (
        await db.query<Row>(
          'bus_credentials_list',
          `SELECT ${COLUMNS} FROM resource.bus_credentials WHERE project_id = $1
           ORDER BY created_at, credential_id`,
          [projectId],
        )
      ).map(fromRow),
    revoke: async (projectId, credentialId) => {
      const rows = await db.query<Row>(
        'bus_credentials_revoke',
        `UPDATE resource.bus_credentials SET revoked_at = COALESCE(revoked_at, now())
         WHERE project_id = $1 AND credential_id = $2 RETURNING ${COLUMNS}`,
        [projectId, credentialId],
      );
      return rows[0] === undefined ? undefined : fromRow(rows[0]);
    },
    revocations: () => listRevocations(db),
    pushRevocations: (push) =>
      db.tx(async (tx) => {
        await tx.query(
          'bus_credentials_lock',
          `SELECT pg_advisory_xact_lock(hashtextextended('toolmesh.bus_credentials', 0))`,
          [],
        );
        await push(await listRevocations(tx));
      }),
  };
}
