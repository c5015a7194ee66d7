export { closeNats, connectNats, sealMsgIdsWithCreds } from './connection.ts';
export type { ConnectOptions } from './connection.ts';
export { createBus } from './bus.ts';
export type { Bus, BusOptions, PublishOptions, PublishAck } from './bus.ts';
export { backoffMs, isTerminalError } from './consume.ts';
export type {
  Delivery,
  DeliveryHandler,
  Disposition,
  Consumption,
  ConsumeOptions,
} from './consume.ts';
export { followStream } from './follow.ts';
export type { Follow, FollowOptions } from './follow.ts';
export { subscribeGuarded } from './subscribe.ts';
export type { GuardedSubscribeOptions } from './subscribe.ts';
export { createLeaseStore } from './lease.ts';
export type { Lease, LeaseRecord, LeaseStore, AcquireResult, CancelMark } from './lease.ts';
export { projectStreamLimitsOf, provisionProjectStream } from './provision.ts';
export type { ConsumerSpec, ProjectStreamLimits, StreamSettings } from './provision.ts';
export { createFairSlots, STREAM_CREATED_ADVISORY } from './fair.ts';
export type { FairSlots, ProjectConsumerSpec, ProjectsConsumeOptions } from './fair.ts';
