// envd's file system for the fake E2B server: the `filesystem.Filesystem` RPCs the SDK's
// `files` API calls (Stat, MakeDir, Move, ListDir, Remove) and envd's HTTP `/files` routes
// (download; upload as multipart/form-data or, for newer envd, application/octet-stream).
import { lstat, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { basename, dirname, join } from 'node:path';
import { hostPath, sandboxPath } from './fake-e2b-sandbox.ts';
import type { FakeSandbox } from './fake-e2b-sandbox.ts';
import { ConnectError, HttpError, sendJson, sendUnary } from './fake-e2b-wire.ts';

interface EntryInfo {
  readonly name: string;
  readonly type: string;
  readonly path: string;
  readonly size: string;
  readonly mode: number;
  readonly permissions: string;
  readonly owner: string;
  readonly group: string;
  readonly modifiedTime: string;
}

function fileType(stats: Stats): string {
  if (stats.isSymbolicLink()) return 'FILE_TYPE_SYMLINK';
  if (stats.isDirectory()) return 'FILE_TYPE_DIRECTORY';
  return 'FILE_TYPE_FILE';
}

async function entryOf(sandbox: FakeSandbox, host: string): Promise<EntryInfo> {
  const stats = await lstat(host);
  return {
    name: basename(host),
    type: fileType(stats),
    path: sandboxPath(sandbox, host),
    // int64 travels as a string in proto3 JSON.
    size: String(stats.size),
    mode: stats.mode & 0o777,
    permissions: (stats.mode & 0o777).toString(8),
    owner: 'user',
    group: 'user',
    modifiedTime: stats.mtime.toISOString(),
  };
}

function notFound(err: unknown, path: string): never {
  if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
    throw new ConnectError('not_found', `path '${path}' does not exist`);
  }
  throw err;
}

export async function filesystemRpc(
  sandbox: FakeSandbox,
  method: string,
  message: unknown,
  res: ServerResponse,
): Promise<void> {
  const request = message as {
    path?: string;
    depth?: number;
    source?: string;
    destination?: string;
  };
  const path = request.path ?? '';
  switch (method) {
    case 'Stat': {
      const entry = await entryOf(sandbox, hostPath(sandbox, path)).catch((e) => notFound(e, path));
      return sendUnary(res, { entry });
    }
    case 'MakeDir': {
      const host = hostPath(sandbox, path);
      if (await lstat(host).catch(() => undefined)) {
        throw new ConnectError('already_exists', `path '${path}' already exists`);
      }
      await mkdir(host, { recursive: true });
      return sendUnary(res, { entry: await entryOf(sandbox, host) });
    }
    case 'Move': {
      const source = hostPath(sandbox, request.source ?? '');
      const destination = hostPath(sandbox, request.destination ?? '');
      await rename(source, destination).catch((e) => notFound(e, request.source ?? ''));
      return sendUnary(res, { entry: await entryOf(sandbox, destination) });
    }
    case 'ListDir': {
      const host = hostPath(sandbox, path);
      const entries = await listDir(sandbox, host, Math.max(1, request.depth ?? 1)).catch((e) =>
        notFound(e, path),
      );
      return sendUnary(res, { entries });
    }
    case 'Remove': {
      const host = hostPath(sandbox, path);
      await lstat(host).catch((e) => notFound(e, path));
      await rm(host, { recursive: true, force: true });
      return sendUnary(res, {});
    }
    default:
      throw new ConnectError('unimplemented', `filesystem.Filesystem/${method} is not implemented`);
  }
}

async function listDir(sandbox: FakeSandbox, host: string, depth: number): Promise<EntryInfo[]> {
  const out: EntryInfo[] = [];
  for (const name of (await readdir(host)).sort()) {
    const entry = await entryOf(sandbox, join(host, name));
    out.push(entry);
    if (depth > 1 && entry.type === 'FILE_TYPE_DIRECTORY') {
      out.push(...(await listDir(sandbox, join(host, name), depth - 1)));
    }
  }
  return out;
}

/** `GET /files?path=`: the file's bytes. */
export async function downloadFile(
  sandbox: FakeSandbox,
  query: URLSearchParams,
  res: ServerResponse,
): Promise<void> {
  const path = query.get('path') ?? '';
  const host = hostPath(sandbox, path);
  const stats = await lstat(host).catch(() => undefined);
  if (!stats) throw new HttpError(404, `path '${path}' does not exist`);
  if (!stats.isFile()) throw new HttpError(400, `path '${path}' is not a file`);
  const data = await readFile(host);
  res.writeHead(200, {
    'Content-Type': 'application/octet-stream',
    'Content-Length': data.length,
  });
  res.end(data);
}

/** `POST /files?path=`: writes each uploaded file, creating parent folders; answers their entries. */
export async function uploadFiles(
  sandbox: FakeSandbox,
  req: IncomingMessage,
  body: Buffer,
  query: URLSearchParams,
  res: ServerResponse,
): Promise<void> {
  const contentType = req.headers['content-type'] ?? '';
  const files: { path: string; data: Uint8Array }[] = [];
  if (contentType.startsWith('multipart/form-data')) {
    // The web platform's own multipart parser: Response parses what FormData serialised.
    const form = await new Response(body, { headers: { 'Content-Type': contentType } }).formData();
    for (const value of form.getAll('file')) {
      if (typeof value === 'string') continue;
      const path = query.get('path') ?? value.name;
      files.push({ path, data: new Uint8Array(await value.arrayBuffer()) });
    }
  } else {
    const path = query.get('path');
    if (path === null) throw new HttpError(400, 'path is required for an octet-stream upload');
    files.push({ path, data: body });
  }
  if (files.length === 0) throw new HttpError(400, 'no file in the upload');
  const written = [];
  for (const file of files) {
    const host = hostPath(sandbox, file.path);
    await mkdir(dirname(host), { recursive: true });
    const stats = await lstat(host).catch(() => undefined);
    if (stats?.isDirectory()) throw new HttpError(400, `path '${file.path}' is a directory`);
    await writeFile(host, file.data);
    written.push({ name: basename(host), type: 'file', path: sandboxPath(sandbox, host) });
  }
  sendJson(res, 200, written);
}
