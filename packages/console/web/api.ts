// The api as the console uses it: the key (kept in sessionStorage, gone with the tab) is sent as
// the bearer token; live events come from the SSE route, read with fetch so the key travels in
// a header rather than a URL.
import { createParser } from 'eventsource-parser';

const KEY = 'toolmesh.key';
const PROJECT = 'toolmesh.project';

export const session = {
  get key(): string | null {
    return sessionStorage.getItem(KEY);
  },
  get project(): string | null {
    return sessionStorage.getItem(PROJECT);
  },
  signIn(key: string, project: string): void {
    sessionStorage.setItem(KEY, key);
    sessionStorage.setItem(PROJECT, project);
  },
  signOut(): void {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(PROJECT);
  },
};

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const headers = (key = session.key): Record<string, string> =>
  key ? { authorization: `Bearer ${key}` } : {};

export async function get<T>(path: string, key?: string): Promise<T> {
  const res = await fetch(path, { headers: headers(key) });
  const body = (await res.json().catch(() => ({}))) as T & {
    error?: { code: string; message: string };
  };
  if (!res.ok) {
    throw new ApiError(
      res.status,
      body.error?.code ?? 'error',
      body.error?.message ?? res.statusText,
    );
  }
  return body;
}

/** A POST with a JSON body; the answer's body, or an ApiError. */
export async function post<T>(path: string, body: unknown = {}): Promise<T> {
  const res = await fetch(path, {
    method: 'POST',
    headers: { ...headers(), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const out = (await res.json().catch(() => ({}))) as T & {
    error?: { code: string; message: string };
  };
  if (!res.ok) {
    throw new ApiError(
      res.status,
      out.error?.code ?? 'error',
      out.error?.message ?? res.statusText,
    );
  }
  return out;
}

/** What an action's failure says to the user: the api's code and message. */
export const errorText = (err: unknown): string =>
  err instanceof ApiError
    ? `${err.code}: ${err.message}`
    : err instanceof Error
      ? err.message
      : String(err);

/** `/v1/projects/<project><rest>` of the signed-in project. */
export const p = (rest: string): string =>
  `/v1/projects/${encodeURIComponent(session.project ?? '')}${rest}`;

/** A file of the api as a blob: URL (images need the bearer token too). */
export async function blobUrl(path: string): Promise<string> {
  const res = await fetch(path, { headers: headers() });
  if (!res.ok) throw new ApiError(res.status, 'download_failed', `${res.status} ${path}`);
  return URL.createObjectURL(await res.blob());
}

export interface LiveEvent {
  kind: string;
  channel: string;
  name: string;
  body: Record<string, unknown> | null;
}

/** Follows the project's events until `signal` aborts; reconnects after a drop. */
export async function follow(
  onEvent: (e: LiveEvent) => void,
  signal: AbortSignal,
  onState: (connected: boolean) => void = () => undefined,
): Promise<void> {
  while (!signal.aborted) {
    try {
      const res = await fetch(p('/events'), { headers: headers(), signal });
      if (!res.ok || !res.body) throw new ApiError(res.status, 'events', 'events refused');
      onState(true);
      const parser = createParser({
        onEvent: (ev) => onEvent(JSON.parse(ev.data) as LiveEvent),
      });
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
    } catch {
      if (signal.aborted) return;
    }
    onState(false);
    await new Promise((r) => setTimeout(r, 1000));
  }
}
