// A local package index for tests, so nothing reaches the internet: a PEP 503 "simple" index
// (pip's protocol) serving pure-Python wheels built here, and an npm registry serving tarballs
// built here (a packument per package, the tarball beside it). It counts every request, so a
// test can tell whether an install happened.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { promisify } from 'node:util';
import yazl from 'yazl';

export interface PackageIndex {
  /** The PEP 503 index URL (`http://127.0.0.1:<port>/simple/`). */
  readonly pythonUrl: string;
  /** The npm registry URL (`http://127.0.0.1:<port>/npm/`). */
  readonly npmUrl: string;
  /** `127.0.0.1:<port>`: the host a sandbox must be allowed to reach. */
  readonly host: string;
  /** Paths requested so far, oldest first. */
  requests(): string[];
  /** Adds a pure-Python wheel of `name` `version` holding `files` (paths inside site-packages). */
  addWheel(name: string, version: string, files: Record<string, string>): Promise<void>;
  /** Adds an npm package `name` `version` holding `files` (paths inside the package). */
  addNpmPackage(name: string, version: string, files: Record<string, string>): Promise<void>;
  close(): Promise<void>;
}

const run = promisify(execFile);

/** PEP 503 name normalization. */
export const normalizePackageName = (name: string): string =>
  name.toLowerCase().replace(/[-_.]+/g, '-');

const b64urlSha256 = (data: Buffer) =>
  createHash('sha256')
    .update(data)
    .digest('base64')
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');

async function buildWheel(
  name: string,
  version: string,
  files: Record<string, string>,
): Promise<Buffer> {
  const dist = `${name.replace(/[-.]+/g, '_')}-${version}`;
  const entries: [string, Buffer][] = Object.entries(files).map(([p, t]) => [p, Buffer.from(t)]);
  entries.push([
    `${dist}.dist-info/METADATA`,
    Buffer.from(`Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n`),
  ]);
  entries.push([
    `${dist}.dist-info/WHEEL`,
    Buffer.from(
      'Wheel-Version: 1.0\nGenerator: toolmesh-testing\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
    ),
  ]);
  const record = entries.map(([p, d]) => `${p},sha256=${b64urlSha256(d)},${d.length}`);
  record.push(`${dist}.dist-info/RECORD,,`);
  entries.push([`${dist}.dist-info/RECORD`, Buffer.from(`${record.join('\n')}\n`)]);
  const zip = new yazl.ZipFile();
  for (const [p, d] of entries) zip.addBuffer(d, p, { mtime: new Date('2024-01-01T00:00:00Z') });
  zip.end();
  return buffer(zip.outputStream);
}

async function buildTarball(files: Record<string, string>): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'toolmesh-npm-'));
  try {
    for (const [p, text] of Object.entries(files)) {
      const path = join(dir, 'package', p);
      await mkdir(dirname(path), { recursive: true });
      await writeFile(path, text);
    }
    await run('tar', ['-czf', join(dir, 'pkg.tgz'), '-C', dir, 'package']);
    return await readFile(join(dir, 'pkg.tgz'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export interface PackageIndexOptions {
  /** Delay of every index page (a slow index, to make installs overlap). */
  readonly delayMs?: number;
}

export async function startPackageIndex(options: PackageIndexOptions = {}): Promise<PackageIndex> {
  const wheels = new Map<string, { file: string; data: Buffer }[]>();
  const files = new Map<string, Buffer>();
  const npm = new Map<string, { versions: Record<string, unknown>; latest: string }>();
  const seen: string[] = [];
  let base = '';

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]!);
    seen.push(path);
    const send = (status: number, type: string, body: string | Buffer) => {
      res.writeHead(status, { 'content-type': type });
      res.end(body);
    };
    let m: RegExpExecArray | null;
    if ((m = /^\/simple\/([^/]+)\/?$/.exec(path))) {
      const list = wheels.get(normalizePackageName(m[1]!));
      if (!list) return send(404, 'text/plain', 'no such project');
      const links = list.map(
        (w) =>
          `<a href="${base}/files/${w.file}#sha256=${createHash('sha256').update(w.data).digest('hex')}">${w.file}</a>`,
      );
      return send(
        200,
        'text/html',
        `<!DOCTYPE html><html><body>\n${links.join('<br/>\n')}\n</body></html>\n`,
      );
    }
    if ((m = /^\/files\/([^/]+)$/.exec(path))) {
      const data = files.get(m[1]!);
      return data
        ? send(200, 'application/octet-stream', data)
        : send(404, 'text/plain', 'no such file');
    }
    if ((m = /^\/npm\/(.+)$/.exec(path))) {
      const pkg = npm.get(m[1]!);
      if (!pkg) return send(404, 'application/json', JSON.stringify({ error: 'not_found' }));
      return send(
        200,
        'application/json',
        JSON.stringify({ name: m[1], 'dist-tags': { latest: pkg.latest }, versions: pkg.versions }),
      );
    }
    send(404, 'text/plain', 'not found');
  };

  const delayMs = options.delayMs ?? 0;
  const server = createServer((req, res) => {
    if (delayMs > 0) setTimeout(() => handle(req, res), delayMs);
    else handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  base = `http://127.0.0.1:${port}`;
  return {
    pythonUrl: `${base}/simple/`,
    npmUrl: `${base}/npm/`,
    host: `127.0.0.1:${port}`,
    requests: () => [...seen],
    addWheel: async (name, version, content) => {
      const data = await buildWheel(name, version, content);
      const file = `${name.replace(/[-.]+/g, '_')}-${version}-py3-none-any.whl`;
      files.set(file, data);
      const key = normalizePackageName(name);
      wheels.set(key, [...(wheels.get(key) ?? []), { file, data }]);
    },
    addNpmPackage: async (name, version, content) => {
      const data = await buildTarball({
        'package.json': JSON.stringify({ name, version, main: 'index.js' }),
        ...content,
      });
      // A scoped name's slash would make a second path segment: /files/ takes one.
      const file = `${name.replace('/', '__')}-${version}.tgz`;
      files.set(file, data);
      const pkg = npm.get(name) ?? { versions: {}, latest: version };
      pkg.versions[version] = {
        name,
        version,
        main: 'index.js',
        dist: {
          tarball: `${base}/files/${file}`,
          shasum: createHash('sha1').update(data).digest('hex'),
          integrity: `sha512-${createHash('sha512').update(data).digest('base64')}`,
        },
      };
      pkg.latest = version;
      npm.set(name, pkg);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
