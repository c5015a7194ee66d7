// Pushes the application account's JWT to the server through the system account: the `full`
// resolver stores it and applies it at once, and the server closes every connection of a user the
// new revocation list names. One request answers for one server; a cluster's servers share
// updates among themselves.
import { connect, credsAuthenticator } from '@nats-io/transport-node';
import type { RevocationList } from '@nats-io/jwt';
import { appAccountJwt, systemUserCreds } from './jwts.ts';
import type { BusKeys } from './keys.ts';

const CLAIMS_UPDATE = '$SYS.REQ.CLAIMS.UPDATE';

interface ClaimsUpdateReply {
  data?: { code?: number; message?: string };
  error?: { code?: number; description?: string };
}

export async function pushAppAccount(
  keys: BusKeys,
  servers: string,
  revocations: RevocationList,
  timeoutMs = 5_000,
): Promise<void> {
  const jwt = await appAccountJwt(keys, revocations);
  const nc = await connect({
    servers: servers.split(',').map((s) => s.trim()),
    authenticator: credsAuthenticator(new TextEncoder().encode(await systemUserCreds(keys))),
    name: 'toolmesh:account-push',
    timeout: timeoutMs,
  });
  try {
    const reply = await nc.request(CLAIMS_UPDATE, new TextEncoder().encode(jwt), {
      timeout: timeoutMs,
    });
    const body = reply.json<ClaimsUpdateReply>();
    if (body.error !== undefined) {
      throw new Error(
        `NATS refused the account update: ${body.error.description ?? 'unknown error'}`,
      );
    }
  } finally {
    await nc.close();
  }
}
