// The core domain's repositories, made over one Db (a pool or a transaction).
// The service instances table (state.service_instances): who is alive.
import type { Db } from './db.ts';
import { createInstancesRepo, type InstancesRepo } from './instances.ts';

export interface CoreStore {
  readonly instances: InstancesRepo;
}

export function createCoreStore(db: Db): CoreStore {
  return {
    instances: createInstancesRepo(db),
  };
}
