// Service instances (state.service_instances): a heartbeat row per running instance, so the
// reaper can tell a task head's owner that is alive from one that has been gone for a while.
// Ages are computed by Postgres (now() - last_seen_at): instances' clocks may disagree.
import type { Db } from './db.ts';

export interface ServiceInstanceRecord {
  instance_id: string;
  service: string;
  host: string;
  pid: number;
  started_at: Date;
  last_seen_at: Date;
  /** Milliseconds since the instance's last heartbeat, by the database's clock. */
  seen_ago_ms: number;
}

export interface InstanceHeartbeat {
  instanceId: string;
  service: string;
  host: string;
  pid: number;
  startedAt: Date;
}

export interface InstancesRepo {
  /** Records that the instance is alive now (a restart under the same id replaces the row). */
  heartbeat(h: InstanceHeartbeat): Promise<void>;
  /** The instances of one service, with how long ago each was seen. */
  list(service: string): Promise<ServiceInstanceRecord[]>;
}

export function createInstancesRepo(db: Db): InstancesRepo {
  return {
    heartbeat: async (h) => {
      await db.query(
        'service_instances_heartbeat',
        `INSERT INTO state.service_instances (instance_id, service, host, pid, started_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (instance_id) DO UPDATE SET service = $2, host = $3, pid = $4,
           started_at = $5, last_seen_at = now()`,
        [h.instanceId, h.service, h.host, h.pid, h.startedAt],
      );
    },
    list: async (service) =>
      (
        await db.query<Omit<ServiceInstanceRecord, 'seen_ago_ms'> & { seen_ago_ms: string }>(
          'service_instances_list',
          `SELECT instance_id, service, host, pid, started_at, last_seen_at,
             (extract(epoch FROM now() - last_seen_at) * 1000)::bigint AS seen_ago_ms
           FROM state.service_instances WHERE service = $1`,
          [service],
        )
      ).map((r) => ({ ...r, seen_ago_ms: Number(r.seen_ago_ms) })),
  };
}
