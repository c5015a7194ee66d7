// Operator, account and user JWTs of a deployment, signed from its keys. The account JWT is
// rebuilt from the keys and the current revocation list whenever a credential is revoked, so the
// server-side copy never drifts from what the keys file and Postgres say.
import {
  encodeAccount,
  encodeOperator,
  encodeUser,
  fmtCreds,
  type RevocationList,
} from '@nats-io/jwt';
import { createUser, fromSeed } from '@nats-io/nkeys';
import { publicKeyOf, type BusKeys } from './keys.ts';
import type { SubjectPermissions } from './permissions.ts';

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => new TextDecoder().decode(b);

export const APP_ACCOUNT_NAME = 'TOOLMESH';
export const SYSTEM_ACCOUNT_NAME = 'SYS';

// An account JWT without limits gets zero connections and subscriptions, not unlimited ones.
const CORE_UNLIMITED = {
  subs: -1,
  data: -1,
  payload: -1,
  imports: -1,
  exports: -1,
  wildcards: true,
  conn: -1,
  leaf: -1,
} as const;

export function operatorJwt(keys: BusKeys): Promise<string> {
  return encodeOperator('toolmesh', fromSeed(bytes(keys.operator_seed)), {
    system_account: publicKeyOf(keys.system_account_seed),
  });
}

export function systemAccountJwt(keys: BusKeys): Promise<string> {
  return encodeAccount(
    SYSTEM_ACCOUNT_NAME,
    publicKeyOf(keys.system_account_seed),
    { limits: { ...CORE_UNLIMITED } },
    { signer: fromSeed(bytes(keys.operator_seed)) },
  );
}

/** The application account: JetStream on, users signed by its signing key, `revocations` cut off. */
export function appAccountJwt(keys: BusKeys, revocations: RevocationList = {}): Promise<string> {
  return encodeAccount(
    APP_ACCOUNT_NAME,
    publicKeyOf(keys.account_seed),
    {
      limits: {
        ...CORE_UNLIMITED,
        mem_storage: -1,
        disk_storage: -1,
        streams: -1,
        consumer: -1,
      },
      signing_keys: [publicKeyOf(keys.account_signing_seed)],
      ...(Object.keys(revocations).length > 0 ? { revocations } : {}),
    },
    { signer: fromSeed(bytes(keys.operator_seed)) },
  );
}

export interface MintedUser {
  publicKey: string;
  jwt: string;
  /** The user's seed (SU...): proves the identity. Shown once, stored nowhere. */
  seed: string;
  /** The `.creds` file text: the JWT and the seed. */
  creds: string;
}

/** A user of the application account with the given permissions, signed by the signing key. */
export async function mintUser(
  keys: BusKeys,
  name: string,
  perms: SubjectPermissions,
  opts: { seed?: string } = {},
): Promise<MintedUser> {
  const ukp = opts.seed === undefined ? createUser() : fromSeed(bytes(opts.seed));
  const jwt = await encodeUser(
    name,
    ukp,
    publicKeyOf(keys.account_seed),
    {
      pub: { allow: perms.pub },
      sub: { allow: perms.sub },
      // An empty allow-list would mean "everything"; deny all when nothing is allowed.
      ...(perms.pub.length === 0 ? { pub: { deny: ['>'] } } : {}),
      ...(perms.sub.length === 0 ? { sub: { deny: ['>'] } } : {}),
    },
    { signer: fromSeed(bytes(keys.account_signing_seed)) },
  );
  const seed = text(ukp.getSeed());
  return { publicKey: ukp.getPublicKey(), jwt, seed, creds: text(fmtCreds(jwt, ukp)) };
}

/** The system account's user: the api pushes account updates (revocations) through it. */
export async function systemUserCreds(keys: BusKeys): Promise<string> {
  const ukp = fromSeed(bytes(keys.system_user_seed));
  const jwt = await encodeUser('sys', ukp, fromSeed(bytes(keys.system_account_seed)));
  return text(fmtCreds(jwt, ukp));
}
