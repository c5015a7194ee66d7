// The facade over plain HTTP, below any SDK: requests with any Host header (fetch sets its own),
// and SSE responses read event by event, id and retry fields included.
import { request, type IncomingMessage } from 'node:http';

export interface RawRequest {
  method?: string;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface SseEvent {
  id: string | undefined;
  retry: number | undefined;
  /** The data lines joined; '' for a priming event. */
  data: string;
}

export interface RawResponse {
  status: number;
  headers: IncomingMessage['headers'];
  /** The next SSE event (comment-only blocks such as keep-alives skipped); undefined at the end. */
  nextEvent(): Promise<SseEvent | undefined>;
  /** The whole body (what is left of it). */
  text(): Promise<string>;
  close(): void;
}

/** Sends one request to `url`'s address; `headers.host` may name anything. */
export function rawRequest(url: URL, r: RawRequest = {}): Promise<RawResponse> {
  const body = r.body === undefined ? undefined : JSON.stringify(r.body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        method: r.method ?? 'POST',
        headers: {
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...r.headers,
        },
      },
      (res) => {
        res.setEncoding('utf8');
        let buffered = '';
        let ended = false;
        const waiters: (() => void)[] = [];
        const wake = () => waiters.splice(0).forEach((w) => w());
        res.on('data', (chunk: string) => {
          buffered += chunk;
          wake();
        });
        res.on('end', () => {
          ended = true;
          wake();
        });
        res.on('error', () => {
          ended = true;
          wake();
        });
        const more = () => new Promise<void>((w) => waiters.push(w));
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          async nextEvent() {
            for (;;) {
              const at = buffered.indexOf('\n\n');
              if (at >= 0) {
                const block = buffered.slice(0, at);
                buffered = buffered.slice(at + 2);
                const event = parseEvent(block);
                if (event) return event;
                continue;
              }
              if (ended) return undefined;
              await more();
            }
          },
          async text() {
            while (!ended) await more();
            return buffered;
          },
          close: () => res.destroy(),
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function parseEvent(block: string): SseEvent | undefined {
  let id: string | undefined;
  let retry: number | undefined;
  const data: string[] = [];
  let fields = 0;
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    fields += 1;
    if (name === 'id') id = value;
    else if (name === 'retry') retry = Number(value);
    else if (name === 'data') data.push(value);
  }
  return fields === 0 ? undefined : { id, retry, data: data.join('\n') };
}
