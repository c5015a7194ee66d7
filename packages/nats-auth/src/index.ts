export { ServiceUser, busKeysSchema, generateBusKeys, parseBusKeys, publicKeyOf } from './keys.ts';
export type { BusKeys } from './keys.ts';
export {
  SERVICE_INBOX,
  credentialInboxPrefix,
  projectCredentialPermissions,
  servicePermissions,
} from './permissions.ts';
export type { SubjectPermissions } from './permissions.ts';
export { appAccountJwt, mintUser, operatorJwt, systemAccountJwt, systemUserCreds } from './jwts.ts';
export type { MintedUser } from './jwts.ts';
export { natsServerConfig } from './server-config.ts';
export type { ServerConfigOptions } from './server-config.ts';
export { pushAppAccount } from './push.ts';
export { credsSeed, loadBusKeys, loadCreds } from './load.ts';
