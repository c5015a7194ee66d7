// Reads a credential setting that is either a path or the text itself (`nats.creds`,
// `nats.auth_keys`), so a deployment can mount a file or pass a secret through the environment.
// Errors name the setting and the path, never the content.
import { readFileSync } from 'node:fs';
import { parseBusKeys, type BusKeys } from './keys.ts';

const CREDS_START = '-----BEGIN NATS USER JWT-----';

export function loadCreds(value: string, setting = 'nats.creds'): string {
  const text = value.trimStart().startsWith(CREDS_START) ? value : readSetting(value, setting);
  if (!text.includes(CREDS_START)) throw new Error(`${setting} is not a NATS .creds file`);
  return text;
}

const SEED = /-{3,}BEGIN USER NKEY SEED-{3,}\s*\n\s*(S[A-Z2-7]+)\s*\n/;

/**
 * The user's nkey seed in a `.creds` text: the one secret a publisher holds that no other user
 * does (its Nats-Msg-Ids are sealed with a key derived from it).
 */
export function credsSeed(creds: string, setting = 'nats.creds'): string {
  const m = SEED.exec(creds);
  if (!m?.[1]) throw new Error(`${setting} holds no user nkey seed`);
  return m[1];
}

export function loadBusKeys(value: string, setting = 'nats.auth_keys'): BusKeys {
  const text = value.trimStart().startsWith('{') ? value : readSetting(value, setting);
  try {
    return parseBusKeys(text);
  } catch (err) {
    throw new Error(`${setting}: ${(err as Error).message}`, { cause: err });
  }
}

function readSetting(path: string, setting: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new Error(`${setting}: cannot read ${path} (${code})`, { cause: err });
  }
}
