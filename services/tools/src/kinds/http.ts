// The `http` kind: one HTTP request per attempt, built from the tool's template. `{param}`
// placeholders of the URL take percent-encoded arguments, the arguments named in `query` become
// query parameters, the rest (or those named in `body`) a JSON body (none for GET and DELETE);
// `header_params` become headers and `body_param` names an argument sent as the whole JSON body
// (what an OpenAPI import produces); auth comes from a project secret, or is an OAuth 2.0 access
// token (oauth.ts; a 401 refreshes it once and sends again). Requests go through the egress dispatcher (private
// addresses refused after DNS) with the call's AbortSignal, so a deadline or a cancel aborts
// them. A 2xx body is the result (JSON when it says so, text otherwise) up to max_result_bytes:
// a larger one fails with payload_too_large rather than being cut (a cut JSON document is not
// JSON). Any other status fails with upstream_error, the status and a bounded excerpt.
import { HttpSpec, ToolError, urlPlaceholders } from '@toolmesh/protocol';
import { request } from 'undici';
import { traceHeaders } from '@toolmesh/telemetry';
import type { Egress } from '../egress.ts';
import { egressDeniedIn } from '../egress.ts';
import type { RegistryTool } from '@toolmesh/tool-service';
import { UpstreamFailure, type AttemptContext, type KindExecutor } from './kind.ts';

export interface HttpExecutorOptions {
  egress: Egress;
  maxResultBytes: number;
  /** Most bytes of an error body kept in the failed result's details. */
  excerptBytes?: number;
}

/** Statuses worth another attempt. */
const RETRYABLE_STATUS: ReadonlySet<number> = new Set([429, 502, 503, 504]);
/** Socket failures worth another attempt: the connection broke or was not taken. */
const RETRYABLE_NET: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
]);

interface Prepared {
  spec: HttpSpec;
  placeholders: Set<string>;
  query: Set<string>;
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date; undefined when absent or bad. */
export function retryAfterMs(
  value: string | string[] | undefined,
  now = Date.now(),
): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

const asParam = (v: unknown): string =>
  typeof v === 'string' ? v : typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);

function netCode(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_ABORTED') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

export function createHttpExecutor(o: HttpExecutorOptions): KindExecutor {
  const excerptBytes = o.excerptBytes ?? 2_048;
  // One parse per tool version: a registry entry is a new object whenever the row changes.
  const prepared = new WeakMap<RegistryTool, Prepared>();
  const prepare = (tool: RegistryTool): Prepared => {
    let p = prepared.get(tool);
    if (!p) {
      const parsed = HttpSpec.safeParse(tool.spec);
      if (!parsed.success) {
        throw new ToolError(
          `the stored http spec of ${tool.name} is invalid: ${parsed.error.message}`,
          {
            code: 'internal_error',
          },
        );
      }
      p = {
        spec: parsed.data,
        placeholders: new Set(urlPlaceholders(parsed.data.url)),
        query: new Set(parsed.data.query ?? []),
      };
      prepared.set(tool, p);
    }
    return p;
  };

  async function readCapped(
    body: AsyncIterable<Buffer>,
    cap: number,
  ): Promise<{ buf: Buffer; over: boolean }> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of body) {
      size += chunk.length;
      if (size > cap) {
        chunks.push(chunk.subarray(0, Math.max(0, chunk.length - (size - cap))));
        return { buf: Buffer.concat(chunks), over: true };
      }
      chunks.push(chunk);
    }
    return { buf: Buffer.concat(chunks), over: false };
  }

  return {
    attempt: async (tool, args, ctx: AttemptContext) => {
      const { spec, placeholders, query } = prepare(tool);
      const url = new URL(
        spec.url.replace(/\{(\+?)([A-Za-z0-9_-]{1,64})\}/g, (_, plus: string, name: string) => {
          const v = args[name];
          if (v === undefined || v === null) {
            throw new ToolError(`argument ${name} fills the URL of ${tool.name} and is missing`, {
              code: 'invalid_arguments',
              details: { issues: [{ path: `/${name}`, message: 'required by the URL template' }] },
            });
          }
          const text = asParam(v);
          // `{+name}` (RFC 6570 reserved expansion, Google's `v1/{+name}`) keeps the value's
          // slashes: each segment is encoded on its own.
          const segments = plus ? text.split('/') : [text];
          // `.` and `..` survive percent-encoding (and %2E%2E is a dot segment too): as a path
          // segment they would climb out of the template's path on the upstream's host.
          const dot = segments.find((s) => s === '.' || s === '..');
          if (dot !== undefined) {
            throw new ToolError(
              `argument ${name} may not hold "${dot}": it would change the path`,
              {
                code: 'invalid_arguments',
                details: { issues: [{ path: `/${name}`, message: 'a dot segment' }] },
              },
            );
          }
          return segments.map(encodeURIComponent).join('/');
        }),
      );
      for (const name of query) {
        const v = args[name];
        if (v === undefined || v === null) continue;
        const key = spec.query_names?.[name] ?? name;
        for (const item of Array.isArray(v) ? v : [v]) url.searchParams.append(key, asParam(item));
      }
      // The current span's traceparent first: an upstream that traces continues the call's trace.
      const headers: Record<string, string> = { ...traceHeaders(), ...spec.headers };
      for (const [name, header] of Object.entries(spec.header_params ?? {})) {
        const v = args[name];
        if (v === undefined || v === null) continue;
        const text = asParam(v);
        // A header value with a line break would split the request.
        if (/[\r\n]/.test(text)) {
          throw new ToolError(`argument ${name} is a header and may not contain line breaks`, {
            code: 'invalid_arguments',
            details: { issues: [{ path: `/${name}`, message: 'a line break' }] },
          });
        }
        headers[header.toLowerCase()] = text;
      }
      let body: string | undefined;
      if (spec.body_param !== undefined) {
        const v = args[spec.body_param];
        if (v !== undefined) {
          body = JSON.stringify(v);
          headers['content-type'] = 'application/json';
        }
      } else if (spec.method !== 'GET' && spec.method !== 'DELETE') {
        const names =
          spec.body ??
          Object.keys(args).filter(
            (k) => !placeholders.has(k) && !query.has(k) && !(k in (spec.header_params ?? {})),
          );
        const payload = Object.fromEntries(
          names.filter((k) => args[k] !== undefined).map((k) => [k, args[k]]),
        );
        body = JSON.stringify(payload);
        headers['content-type'] = 'application/json';
      }
      // Refused before a secret is even read.
      o.egress.checkUrl(url);
      let oauthToken: string | undefined;
      if (spec.auth) {
        if (spec.auth.type === 'oauth2') {
          oauthToken = await ctx.oauthToken(spec.auth);
          headers['authorization'] = `Bearer ${oauthToken}`;
        } else {
          const secret = await ctx.secret(spec.auth.secret);
          switch (spec.auth.type) {
            case 'bearer':
              headers['authorization'] = `Bearer ${secret}`;
              break;
            case 'basic':
              headers['authorization'] = `Basic ${Buffer.from(secret, 'utf8').toString('base64')}`;
              break;
            case 'header':
              headers[spec.auth.header!.toLowerCase()] = secret;
              break;
            default: {
              const never: never = spec.auth;
              throw new Error(`unknown auth type ${JSON.stringify(never)}`);
            }
          }
        }
      }
      const send = async () => {
        try {
          return await request(url, {
            method: spec.method,
            headers,
            ...(body !== undefined ? { body } : {}),
            dispatcher: o.egress.dispatcher,
            signal: ctx.signal,
          });
        } catch (err) {
          if (ctx.signal.aborted) throw ctx.signal.reason as Error;
          const denied = egressDeniedIn(err);
          if (denied) throw denied;
          const code = netCode(err);
          throw new UpstreamFailure(
            `${spec.method} ${url.origin}${url.pathname} failed: ${(err as Error).message}${code ? ` (${code})` : ''}`,
            {
              code: 'upstream_unreachable',
              retryable: code !== undefined && RETRYABLE_NET.has(code),
              details: { ...(code ? { error: code } : {}) },
              cause: err,
            },
          );
        }
      };
      let res = await send();
      // An OAuth token the upstream no longer takes (revoked, expired early): one forced refresh
      // and one more request, inside this attempt (not one of the tool's retries). A second 401
      // is final: upstream_unauthorized.
      let refreshed = false;
      if (res.statusCode === 401 && spec.auth?.type === 'oauth2' && oauthToken !== undefined) {
        await res.body.dump().catch(() => undefined);
        oauthToken = await ctx.oauthToken(spec.auth, oauthToken);
        headers['authorization'] = `Bearer ${oauthToken}`;
        ctx.annotate({ oauth_refreshed_after_401: true });
        refreshed = true;
        res = await send();
      }
      const status = res.statusCode;
      ctx.annotate({ http_status: status });
      const ok = status >= 200 && status < 300;
      const { buf, over } = await readCapped(res.body, ok ? o.maxResultBytes : excerptBytes).catch(
        (err: unknown) => {
          if (ctx.signal.aborted) throw ctx.signal.reason as Error;
          throw new UpstreamFailure(
            `reading the response of ${tool.name} failed: ${(err as Error).message}`,
            {
              code: 'upstream_unreachable',
              retryable: RETRYABLE_NET.has(netCode(err) ?? ''),
              cause: err,
            },
          );
        },
      );
      if (over) res.body.destroy();
      if (!ok) {
        if (refreshed && status === 401) {
          throw new UpstreamFailure(
            `${tool.name}: the upstream answered 401 to a freshly refreshed OAuth token`,
            {
              code: 'upstream_unauthorized',
              retryable: false,
              details: {
                status,
                body_excerpt: buf.toString('utf8'),
                ...(over ? { excerpt_truncated: true } : {}),
              },
            },
          );
        }
        throw new UpstreamFailure(`${tool.name}: the upstream answered ${status}`, {
          retryable: RETRYABLE_STATUS.has(status),
          retryAfterMs: retryAfterMs(res.headers['retry-after']),
          details: {
            status,
            body_excerpt: buf.toString('utf8'),
            ...(over ? { excerpt_truncated: true } : {}),
          },
        });
      }
      if (over) {
        throw new ToolError(
          `the response of ${tool.name} is larger than tools.max_result_bytes (${o.maxResultBytes} bytes)`,
          { code: 'payload_too_large', details: { limit_bytes: o.maxResultBytes, status } },
        );
      }
      if (buf.length === 0) return null;
      const type = String(res.headers['content-type'] ?? '');
      const text = buf.toString('utf8');
      if (/[/+]json\b/i.test(type)) {
        try {
          return JSON.parse(text) as unknown;
        } catch {
          return text;
        }
      }
      return text;
    },
    close: () => Promise.resolve(),
  };
}
