// Pushes the application account's JWT to the server through the system account: the `full`
// resolver stores it and applies it at once, and the server closes every connection of a user the
// new revocation list names. One request answers for one server; a cluster's servers share
// updates among themselves. Applying an account JWT re-applies the account's JetStream, and for
// that moment every JetStream request of the account fails ("jetstream is not enabled"): with
// `onlyIfChanged`, the JWT the server holds is looked up first and nothing is pushed when its
// revocations are already these (the api's push at every start).
import { connect, credsAuthenticator } from '@nats-io/transport-node';
import type { RevocationList } from '@nats-io/jwt';
import { appAccountJwt, systemUserCreds } from './jwts.ts';
import { publicKeyOf, type BusKeys } from './keys.ts';

const CLAIMS_UPDATE = '$SYS.REQ.CLAIMS.UPDATE';
const claimsLookup = (account: string) => `$SYS.REQ.ACCOUNT.${account}.CLAIMS.LOOKUP`;

interface ClaimsUpdateReply {
  data?: { code?: number; message?: string };
  error?: { code?: number; description?: string };
}

export async function pushAppAccount(
  keys: BusKeys,
  servers: string,
  revocations: RevocationList,
  timeoutMs = 5_000,
  opts: { onlyIfChanged?: boolean } = {},
): Promise<{ pushed: boolean }> {
  const jwt = await appAccountJwt(keys, revocations);
  const nc = await connect({
    servers: servers.split(',').map((s) => s.trim()),
    authenticator: credsAuthenticator(new TextEncoder().encode(await systemUserCreds(keys))),
    name: 'toolmesh:account-push',
    timeout: timeoutMs,
  });
  try {
    if (opts.onlyIfChanged === true) {
      const held = await nc
        .request(claimsLookup(publicKeyOf(keys.account_seed)), new Uint8Array(), {
          timeout: timeoutMs,
        })
        .then((m) => revocationsOf(m.string()))
        .catch(() => undefined);
      if (held !== undefined && sameRevocations(held, revocations)) return { pushed: false };
    }
    const reply = await nc.request(CLAIMS_UPDATE, new TextEncoder().encode(jwt), {
      timeout: timeoutMs,
    });
    const body = reply.json<ClaimsUpdateReply>();
    if (body.error !== undefined) {
      throw new Error(
        `NATS refused the account update: ${body.error.description ?? 'unknown error'}`,
      );
    }
    return { pushed: true };
  } finally {
    await nc.close();
  }
}

/** The revocations of an account JWT's claims; undefined when the text is not an account JWT. */
function revocationsOf(jwt: string): RevocationList | undefined {
  const payload = jwt.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as {
      nats?: { type?: string; revocations?: RevocationList };
    };
    if (claims.nats?.type !== 'account') return undefined;
    return claims.nats.revocations ?? {};
  } catch {
    return undefined;
  }
}

function sameRevocations(a: RevocationList, b: RevocationList): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}
