export { closeNats, connectNats } from './connection.ts';
export type { ConnectOptions } from './connection.ts';
export { createBus } from './bus.ts';
export type { Bus, BusOptions, PublishOptions, PublishAck } from './bus.ts';
export { backoffMs } from './consume.ts';
export type {
  Delivery,
  DeliveryHandler,
  Disposition,
  Consumption,
  ConsumeOptions,
} from './consume.ts';
export { createLeaseStore } from './lease.ts';
export type { Lease, LeaseRecord, LeaseStore, AcquireResult, CancelMark } from './lease.ts';
export type { ConsumerSpec, StreamSettings } from './provision.ts';
export {
  ServiceUser,
  appAccountJwt,
  credentialInboxPrefix,
  generateBusKeys,
  loadBusKeys,
  loadCreds,
  mintUser,
  natsServerConfig,
  parseBusKeys,
  projectCredentialPermissions,
  publicKeyOf,
  pushAppAccount,
  servicePermissions,
  systemUserCreds,
} from './auth/index.ts';
export type { BusKeys, MintedUser, ServerConfigOptions, SubjectPermissions } from './auth/index.ts';
