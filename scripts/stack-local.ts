// The project a `pnpm stack` makes for local use, so that `toolmesh`, the SDK and the console
// work with no flags: the project `local`, an API key of it (role admin) and a bus credential,
// kept in the stack's folder and used again on the next start while the api still accepts them.
// Their places go into stack.json, where the CLI and the SDK find them.
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { credentialIdOf } from '@toolmesh/client';

export const LOCAL_PROJECT = 'local';

export interface LocalProject {
  project: string;
  /** An API key of the project (role admin). */
  apiKey: string;
  /** Path of the project's bus credential (.creds); none when NATS runs without authentication. */
  busCreds: string | undefined;
}

interface ApiAnswer {
  status: number;
  body: Record<string, unknown>;
}

async function call(
  apiUrl: string,
  key: string,
  method: string,
  path: string,
  json?: unknown,
): Promise<ApiAnswer> {
  const res = await fetch(`${apiUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(json === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(json === undefined ? {} : { body: JSON.stringify(json) }),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

function failed(what: string, a: ApiAnswer): Error {
  const e = a.body['error'] as { code?: string; message?: string } | undefined;
  return new Error(`${what}: ${a.status} ${e?.code ?? ''} ${e?.message ?? ''}`.trim());
}

/** The project's API key: the one kept in `dir` while it works, else a new one. */
async function ensureKey(
  apiUrl: string,
  adminKey: string,
  dir: string,
  project: string,
): Promise<string> {
  const file = join(dir, 'local-key');
  const kept = await readFile(file, 'utf8').then(
    (k) => k.trim(),
    () => undefined,
  );
  const p = `/v1/projects/${project}`;
  if (kept && (await call(apiUrl, kept, 'GET', p)).status === 200) return kept;
  let made = await call(apiUrl, adminKey, 'POST', '/v1/projects', {
    id: project,
    name: 'Local',
    key_name: 'local-stack',
  });
  let key: unknown;
  if (made.status === 201) key = (made.body['key'] as { key?: unknown } | undefined)?.key;
  else if (made.status === 409) {
    // The project is there (its database outlived the key file): a new key of it.
    made = await call(apiUrl, adminKey, 'POST', `${p}/keys`, { name: 'local-stack' });
    if (made.status !== 201) throw failed(`a key for the project ${project}`, made);
    key = made.body['key'];
  } else throw failed(`creating the project ${project}`, made);
  if (typeof key !== 'string') throw new Error('the api answered no key');
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  return key;
}

/** The project's bus credential: the one kept in `dir` while it is not revoked, else a new one. */
async function ensureCreds(
  apiUrl: string,
  key: string,
  dir: string,
  project: string,
): Promise<string | undefined> {
  const file = join(dir, 'local.creds');
  const p = `/v1/projects/${project}/bus-credentials`;
  if (existsSync(file)) {
    const id = await credentialIdOf(await readFile(file, 'utf8')).catch(() => undefined);
    const list = await call(apiUrl, key, 'GET', p);
    const live = (list.body['credentials'] as { id: string; revoked_at: string | null }[]) ?? [];
    if (id !== undefined && live.some((c) => c.id === id && c.revoked_at === null)) return file;
  }
  const issued = await call(apiUrl, key, 'POST', p, { name: 'local-stack' });
  const code = (issued.body['error'] as { code?: string } | undefined)?.code;
  // A NATS_URL from outside without authentication: nothing to issue, nothing needed.
  if (code === 'bus_auth_unconfigured') return undefined;
  if (issued.status !== 201) throw failed('issuing a bus credential', issued);
  await writeFile(file, issued.body['creds'] as string, { mode: 0o600 });
  return file;
}

/** Makes (or finds again) the local project, its key and its bus credential. */
export async function ensureLocalProject(opts: {
  apiUrl: string;
  adminKey: string;
  /** The stack's folder: the key and the .creds file are kept here. */
  dir: string;
  /** Default `local`. */
  project?: string;
}): Promise<LocalProject> {
  const project = opts.project ?? LOCAL_PROJECT;
  const apiKey = await ensureKey(opts.apiUrl, opts.adminKey, opts.dir, project);
  const busCreds = await ensureCreds(opts.apiUrl, apiKey, opts.dir, project);
  return { project, apiKey, busCreds };
}
