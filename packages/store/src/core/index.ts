export { createCoreStore } from './store.ts';
export type { CoreStore } from './store.ts';
export { isRetryablePgError, toStoreError } from './errors.ts';
export { createPool } from './pool.ts';
export { isReportedOutage } from './outage.ts';
export type { PoolOptions } from './pool.ts';
export {
  migrate,
  loadMigrations,
  ensureDatabase,
  MigrationError,
  MIGRATIONS_DIR,
} from './migrate.ts';
export type { Migration, MigrateOptions, EnsureDatabaseOptions } from './migrate.ts';
export type { ServiceInstanceRecord, InstanceHeartbeat, InstancesRepo } from './instances.ts';
