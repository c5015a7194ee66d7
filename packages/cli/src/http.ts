// The api over HTTP: one request helper that turns every failure into a CliError with the exit
// code a script expects (401/403 -> 3, 404 -> 4, 400/413/415 -> 2, 409 -> 1, unreachable -> 3).
import { CliError, ExitCode } from './exit.ts';
import type { Settings } from './settings.ts';

export interface ApiRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  /** An array repeats the parameter (`?tag=a&tag=b`). */
  query?: Record<string, string | number | readonly string[] | undefined>;
  json?: unknown;
  form?: FormData;
  timeoutMs?: number;
  /** Another key than the settings' (the admin key, for projects). */
  key?: string | undefined;
}

export interface Download {
  bytes: Buffer;
  contentType: string;
}

export interface Api {
  request<T = unknown>(req: ApiRequest): Promise<T>;
  /** A GET whose answer is bytes (an artifact's content), not JSON. */
  download(path: string, timeoutMs?: number): Promise<Download>;
}

function exitCodeOf(status: number): ExitCode {
  if (status === 401 || status === 403) return ExitCode.connection;
  if (status === 404) return ExitCode.notFound;
  if (status === 409) return ExitCode.failed;
  if (status === 408 || status === 504) return ExitCode.timeout;
  if (status >= 400 && status < 500) return ExitCode.usage;
  return ExitCode.connection;
}

export function createApi(s: Settings): Api {
  const send = async (req: ApiRequest): Promise<Response> => {
    const url = new URL(`${s.apiUrl}${req.path}`);
    for (const [k, v] of Object.entries(req.query ?? {})) {
      if (Array.isArray(v)) for (const one of v) url.searchParams.append(k, String(one));
      else if (v !== undefined) url.searchParams.set(k, String(v));
    }
    const headers: Record<string, string> = {};
    const key = req.key ?? s.apiKey;
    if (key) headers['authorization'] = `Bearer ${key}`;
    let body: string | FormData | undefined;
    if (req.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(req.json);
    } else if (req.form) {
      body = req.form;
    }
    let res: Response;
    try {
      res = await fetch(url, {
        method: req.method ?? 'GET',
        headers,
        ...(body !== undefined ? { body } : {}),
        signal: AbortSignal.timeout(req.timeoutMs ?? 30_000),
      });
    } catch (err) {
      const e = err as Error;
      if (e.name === 'TimeoutError') {
        throw new CliError(ExitCode.timeout, 'timeout', `no answer from ${s.apiUrl} in time`);
      }
      const why = (e.cause as Error | undefined)?.message ?? e.message;
      throw new CliError(
        ExitCode.connection,
        'unreachable',
        `cannot reach the api at ${s.apiUrl}: ${why}`,
        { cause: err },
      );
    }
    if (res.ok) return res;
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    const error = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
    throw new CliError(
      exitCodeOf(res.status),
      error?.code ?? `http_${res.status}`,
      `${req.method ?? 'GET'} ${req.path}: ${res.status} ${error?.message ?? text.slice(0, 200)}`,
    );
  };
  return {
    request: async <T>(req: ApiRequest): Promise<T> => {
      const text = await (await send(req)).text();
      try {
        return (text ? JSON.parse(text) : undefined) as T;
      } catch {
        return undefined as T;
      }
    },
    download: async (path, timeoutMs = 120_000) => {
      const res = await send({ path, timeoutMs });
      return {
        bytes: Buffer.from(await res.arrayBuffer()),
        contentType: res.headers.get('content-type') ?? 'application/octet-stream',
      };
    },
  };
}
