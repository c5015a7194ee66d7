// `toolmesh tools import-openapi <file|url>`: reads an OpenAPI document here, on the user's side
// (a file, or a URL fetched from this machine, bounded in size and time), and sends its text to
// POST /v1/projects/:p/openapi. The api takes documents by body only, so it never connects where
// a tenant points it. For a document fetched from a URL whose server URL is relative (Petstore's
// is `/api/v3`), the base URL is resolved against the document's URL, as OpenAPI says.
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import type { Context } from '../context.ts';
import { CliError, ExitCode, usageError } from '../exit.ts';
import { printJson, printLine } from '../output.ts';
import { projectOf } from '../settings.ts';
import { jsonObjectFile } from './parse.ts';

/** A document larger than this is not fetched further (the api's own limit is [api] openapi_max_bytes). */
const MAX_FETCH_BYTES = 16 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 30_000;

export interface ImportOpenApiFlags {
  prefix: string;
  baseUrl?: string;
  security?: string[];
  include?: string;
  exclude?: string;
  category?: string;
  tag?: string[];
}

interface ImportReport {
  prefix: string;
  added: string[];
  changed: string[];
  removed: string[];
  unchanged: string[];
  skipped: { operation: string; reason: string }[];
  filtered: number;
  warnings: string[];
}

const list = (v: string | undefined) =>
  v === undefined
    ? undefined
    : v
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');

async function fetchDocument(url: URL): Promise<string> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  } catch (err) {
    throw new CliError(
      ExitCode.connection,
      'unreachable',
      `cannot fetch ${url.href}: ${(err as Error).message}`,
    );
  }
  if (!res.ok || !res.body) {
    throw new CliError(ExitCode.notFound, 'not_found', `${url.href} answered ${res.status}`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    size += chunk.length;
    if (size > MAX_FETCH_BYTES) {
      throw new CliError(
        ExitCode.usage,
        'payload_too_large',
        `${url.href} is larger than ${MAX_FETCH_BYTES} bytes`,
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The document's first server URL resolved against where it came from, when it is relative. */
function resolvedBase(text: string, from: URL): string | undefined {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch {
    return undefined; // the api says what is wrong with it
  }
  const servers = (doc as { servers?: unknown } | null)?.servers;
  const first = Array.isArray(servers) ? (servers[0] as { url?: unknown } | undefined) : undefined;
  const url = typeof first?.url === 'string' ? first.url : '';
  if (/^https?:\/\//i.test(url)) return undefined;
  return new URL(url || '/', from).href;
}

export async function toolsImportOpenApi(
  ctx: Context,
  source: string,
  f: ImportOpenApiFlags,
): Promise<number> {
  const security: Record<string, string | Record<string, unknown>> = {};
  for (const s of f.security ?? []) {
    const i = s.indexOf('=');
    if (i <= 0)
      throw usageError(
        `--security is <scheme>=<secret> or <scheme>=@<file>, got ${JSON.stringify(s)}`,
      );
    const value = s.slice(i + 1);
    // `@<file>`: an OAuth 2.0 config for an oauth2 or openIdConnect scheme.
    security[s.slice(0, i)] = value.startsWith('@')
      ? await jsonObjectFile(value, '--security')
      : value;
  }
  let text: string;
  let baseUrl = f.baseUrl;
  if (/^https?:\/\//i.test(source)) {
    const url = new URL(source);
    text = await fetchDocument(url);
    baseUrl ??= resolvedBase(text, url);
  } else {
    text = await readFile(source, 'utf8').catch((err: unknown) => {
      throw new CliError(
        ExitCode.notFound,
        'not_found',
        `cannot read ${source}: ${(err as Error).message}`,
      );
    });
  }
  const report = await ctx.api.request<ImportReport>({
    method: 'POST',
    path: `/v1/projects/${encodeURIComponent(projectOf(ctx.settings))}/openapi`,
    json: {
      prefix: f.prefix,
      document: text,
      security,
      ...(baseUrl ? { base_url: baseUrl } : {}),
      ...(f.include ? { include: list(f.include) } : {}),
      ...(f.exclude ? { exclude: list(f.exclude) } : {}),
      ...(f.category ? { category: f.category } : {}),
      ...(f.tag ? { tags: f.tag } : {}),
    },
  });
  if (ctx.settings.json) {
    printJson(ctx.io, report);
    return ExitCode.ok;
  }
  printLine(
    ctx.io,
    `${report.prefix}: ${report.added.length} added, ${report.changed.length} changed, ${report.removed.length} removed (disabled), ${report.unchanged.length} unchanged, ${report.skipped.length} skipped`,
  );
  for (const [what, names] of [
    ['added', report.added],
    ['changed', report.changed],
    ['removed', report.removed],
  ] as const) {
    for (const n of names) printLine(ctx.io, `  ${what} ${n}`);
  }
  for (const s of report.skipped) printLine(ctx.io, `  skipped ${s.operation}: ${s.reason}`);
  for (const w of report.warnings) printLine(ctx.io, `  warning: ${w}`);
  return ExitCode.ok;
}
