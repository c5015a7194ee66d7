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
