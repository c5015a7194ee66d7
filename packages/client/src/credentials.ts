// Connecting as a project's bus credential (the `.creds` text the api issued): the user's JWT
// and seed authenticate, and the inbox prefix the credential was issued with (read back from
// the JWT's subscribe permissions) is where replies such as JetStream publish acks arrive; the
// default `_INBOX` prefix is not open to a project credential.
import { parseCreds } from '@nats-io/jwt';
import { credsAuthenticator, type ConnectionOptions } from '@nats-io/transport-node';

export type CredsConnectOptions = Required<Pick<ConnectionOptions, 'authenticator'>> &
  Pick<ConnectionOptions, 'inboxPrefix'>;

async function inboxOf(bytes: Uint8Array): Promise<string | undefined> {
  let allowed: string[];
  try {
    allowed = (await parseCreds(bytes)).uc.nats.sub?.allow ?? [];
  } catch (cause) {
    throw new Error('not a NATS .creds file (expected a user JWT and an nkey seed)', { cause });
  }
  return allowed.find((s) => s.startsWith('_INBOX_') && s.endsWith('.>'));
}

/** Connect options for a `.creds` text: an authenticator, and the credential's inbox prefix. */
export async function credsConnectOptions(creds: string): Promise<CredsConnectOptions> {
  const bytes = new TextEncoder().encode(creds);
  const inbox = await inboxOf(bytes);
  return {
    authenticator: credsAuthenticator(bytes),
    ...(inbox === undefined ? {} : { inboxPrefix: inbox.slice(0, -2) }),
  };
}

/**
 * The id of the project credential a `.creds` text belongs to (createClient's `credentialId`),
 * read from its inbox prefix `_INBOX_<project>_<id without dashes>`; undefined for a `.creds`
 * that is not a project credential.
 */
export async function credentialIdOf(creds: string): Promise<string | undefined> {
  const inbox = await inboxOf(new TextEncoder().encode(creds));
  const hex = inbox === undefined ? undefined : /_([0-9a-f]{32})\.>$/.exec(inbox)?.[1];
  if (hex === undefined) return undefined;
  return [0, 8, 12, 16, 20].map((at, i, all) => hex.slice(at, all[i + 1] ?? 32)).join('-');
}
