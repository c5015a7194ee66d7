// Connecting as a project's bus credential (the `.creds` text the api issued): the user's JWT
// and seed authenticate, and the inbox prefix the credential was issued with (read back from
// the JWT's subscribe permissions) is where replies such as JetStream publish acks arrive; the
// default `_INBOX` prefix is not open to a project credential.
import { parseCreds } from '@nats-io/jwt';
import { credsAuthenticator, type ConnectionOptions } from '@nats-io/transport-node';

export type CredsConnectOptions = Required<Pick<ConnectionOptions, 'authenticator'>> &
  Pick<ConnectionOptions, 'inboxPrefix'>;

/** Connect options for a `.creds` text: an authenticator, and the credential's inbox prefix. */
export async function credsConnectOptions(creds: string): Promise<CredsConnectOptions> {
  const bytes = new TextEncoder().encode(creds);
  let allowed: string[];
  try {
    allowed = (await parseCreds(bytes)).uc.nats.sub?.allow ?? [];
  } catch (cause) {
    throw new Error('not a NATS .creds file (expected a user JWT and an nkey seed)', { cause });
  }
  const inbox = allowed.find((s) => s.startsWith('_INBOX_') && s.endsWith('.>'));
  return {
    authenticator: credsAuthenticator(bytes),
    ...(inbox === undefined ? {} : { inboxPrefix: inbox.slice(0, -2) }),
  };
}
