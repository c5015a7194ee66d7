// Upstream OAuth 2.0 access tokens for http tools and http MCP servers (auth type "oauth2"): the
// client_credentials grant, or a stored refresh token exchanged for access tokens (a rotated one
// is written back to its project secret). Tokens are cached in Postgres (state.oauth_tokens,
// sealed with the project-secrets box) and in memory, and fetched again once they have less than
// `refreshMarginMs` left, or when the upstream answered 401 to one (`rejected`).
//
// Single flight: in one instance, concurrent callers of the same token share one promise; across
// instances, the fetch runs under a Postgres advisory lock, and whoever got the lock second finds
// the row written meanwhile (its version moved) and takes that token instead of asking again.
// A refresh-token grant locks on the refresh token's secret, so two configurations that share it
// (another scope, say) never both spend it when the server rotates it.
//
// The token request itself is `oauth4webapi` (panva): a small, dependency-free, maintained client
// that follows RFC 6749 to the letter (client authentication, form encoding, token response
// validation, OAuth error bodies) and takes our egress-guarded fetch. `openid-client` builds on it
// but adds discovery and OIDC we do not use; hand-writing the request would re-do its checks.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import * as oauth from 'oauth4webapi';
import { fetch as undiciFetch } from 'undici';
import { RetryableError, ToolError, type OAuth2Auth } from '@toolmesh/protocol';
import type { LockedOAuthTokens, OAuthTokenRow, RegistryStore, SecretBox } from '@toolmesh/store';
import { egressDeniedIn, type Egress } from './egress.ts';
import { UpstreamFailure } from './kinds/kind.ts';
import { createRedactor } from './redact.ts';
import { secretMissing } from './secrets.ts';
import { untilAborted } from './abort.ts';

export interface OAuthTokenOptions {
  /** The token the upstream just answered 401 to: a new one is fetched unless it was already. */
  rejected?: string | undefined;
  /** Gets every credential value this caller's token touched, so the caller can redact it. */
  reveal?: (value: string) => void;
  /** The caller's signal: it stops waiting (the shared fetch goes on for the others). */
  signal?: AbortSignal | undefined;
}

export interface OAuthTokens {
  /**
   * A valid access token of `auth` for `project`. Throws secret_unavailable (a credential is
   * not stored in the project), oauth_failed (the token endpoint refused; an UpstreamFailure,
   * retryable when the endpoint was down or said 5xx/429), egress_denied.
   */
  token(project: string, auth: OAuth2Auth, o?: OAuthTokenOptions): Promise<string>;
}

export interface OAuthDeps {
  store: RegistryStore;
  box: SecretBox;
  egress: Egress;
  /** Hosts whose token endpoint may be plain http (tools.allowed_private_hosts: local servers). */
  insecureHosts: readonly string[];
  refreshMarginMs: number;
  /** Bounds one token request, and the wait for another instance's. */
  timeoutMs: number;
  logger: Logger;
}

interface Held {
  token: string;
  /** Local clock; undefined: no expiry known. */
  expiresAt: number | undefined;
}

/** Identifies a token configuration: the secrets it names and what it asks for (no values). */
export function cacheKeyOf(auth: OAuth2Auth): string {
  return createHash('sha256')
    .update(
      JSON.stringify([
        auth.grant,
        auth.token_url_secret,
        auth.client_id_secret,
        auth.client_secret_secret ?? null,
        auth.refresh_token_secret ?? null,
        auth.client_auth ?? 'client_secret_basic',
        auth.scope ?? null,
        auth.audience ?? null,
      ]),
    )
    .digest('hex');
}

const sealName = (cacheKey: string) => `oauth:${cacheKey}`;
const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504]);
const MAX_HELD = 10_000;

export function createOAuthTokens(deps: OAuthDeps): OAuthTokens {
  const log = deps.logger.child({ component: 'oauth' });
  const held = new Map<string, Held>();
  const inflight = new Map<string, Promise<Held>>();
  const insecure = new Set(
    deps.insecureHosts.map((h) => h.replace(/^\[(.*)\]$/, '$1').toLowerCase()),
  );

  const fresh = (h: Held) =>
    h.expiresAt === undefined || h.expiresAt - Date.now() > deps.refreshMarginMs;
  const alive = (h: Held) => h.expiresAt === undefined || h.expiresAt > Date.now();

  const heldOf = (project: string, cacheKey: string, row: OAuthTokenRow): Held => ({
    token: deps.box.open(project, sealName(cacheKey), row.sealed),
    expiresAt: row.remaining_ms === null ? undefined : Date.now() + row.remaining_ms,
  });

  const remember = (k: string, h: Held): Held => {
    if (held.size >= MAX_HELD) held.clear();
    held.set(k, h);
    return h;
  };

  const guardedFetch: typeof fetch = async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    deps.egress.checkUrl(url);
    // undici's Response is the WHATWG one oauth4webapi reads; only the declared types differ.
    const res: unknown = await undiciFetch(url, {
      ...(init as object),
      dispatcher: deps.egress.dispatcher,
      redirect: 'manual',
    });
    return res as Response;
  };

  /** Asks the token endpoint. Every value read is revealed and redacted from its errors. */
  async function request(
    project: string,
    auth: OAuth2Auth,
    locked: LockedOAuthTokens,
    reveal: (v: string) => void,
  ): Promise<{ token: string; expiresIn: number | null }> {
    const r = createRedactor();
    const read = async (name: string) => {
      const sealed = await locked.secret(name);
      if (!sealed) throw secretMissing(name);
      const v = deps.box.open(project, name, sealed);
      r.add(v);
      reveal(v);
      return v;
    };
    const tokenUrlText = await read(auth.token_url_secret);
    const clientId = await read(auth.client_id_secret);
    const clientSecret =
      auth.client_secret_secret === undefined ? undefined : await read(auth.client_secret_secret);
    const refreshToken =
      auth.refresh_token_secret === undefined ? undefined : await read(auth.refresh_token_secret);
    const fail = (message: string, retryable: boolean, details: Record<string, unknown> = {}) =>
      new UpstreamFailure(r.redactText(message), {
        code: 'oauth_failed',
        retryable,
        details: r.redact({ grant: auth.grant, ...details }),
      });

    let tokenUrl: URL;
    try {
      tokenUrl = new URL(tokenUrlText);
    } catch {
      throw fail(`secret ${auth.token_url_secret} does not hold a URL`, false);
    }
    const host = tokenUrl.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
    if (tokenUrl.protocol !== 'https:' && !(tokenUrl.protocol === 'http:' && insecure.has(host))) {
      throw fail(
        `the token endpoint in secret ${auth.token_url_secret} must be an https URL (plain http only for hosts in tools.allowed_private_hosts)`,
        false,
      );
    }
    const as: oauth.AuthorizationServer = {
      issuer: tokenUrl.origin,
      token_endpoint: tokenUrl.href,
    };
    const client: oauth.Client = { client_id: clientId };
    const clientAuth =
      clientSecret === undefined
        ? oauth.None()
        : auth.client_auth === 'client_secret_post'
          ? oauth.ClientSecretPost(clientSecret)
          : oauth.ClientSecretBasic(clientSecret);
    const params: Record<string, string> = {
      ...(auth.scope ? { scope: auth.scope } : {}),
      ...(auth.audience ? { audience: auth.audience } : {}),
    };
    const options = {
      [oauth.customFetch]: guardedFetch,
      [oauth.allowInsecureRequests]: tokenUrl.protocol === 'http:',
      signal: AbortSignal.timeout(deps.timeoutMs),
    };
    let got: oauth.TokenEndpointResponse;
    try {
      if (auth.grant === 'client_credentials') {
        const res = await oauth.clientCredentialsGrantRequest(
          as,
          client,
          clientAuth,
          params,
          options,
        );
        got = await oauth.processClientCredentialsResponse(as, client, res);
      } else {
        const res = await oauth.refreshTokenGrantRequest(as, client, clientAuth, refreshToken!, {
          ...options,
          additionalParameters: params,
        });
        got = await oauth.processRefreshTokenResponse(as, client, res);
      }
    } catch (err) {
      const denied = egressDeniedIn(err);
      if (denied) throw denied;
      if (err instanceof oauth.ResponseBodyError) {
        throw fail(
          `the token endpoint refused the ${auth.grant} grant: ${err.error}${err.error_description ? ` (${err.error_description})` : ''}`,
          RETRYABLE_STATUS.has(err.status),
          {
            status: err.status,
            oauth_error: err.error,
            ...(err.error_description ? { description: err.error_description } : {}),
          },
        );
      }
      if (err instanceof oauth.WWWAuthenticateChallengeError) {
        throw fail(`the token endpoint refused the client (${err.status})`, false, {
          status: err.status,
          oauth_error: 'invalid_client',
        });
      }
      // Any other answer: the status when it was one (never the body: it may hold a token).
      const cause = (err as { cause?: unknown }).cause;
      if (cause instanceof Response) {
        throw fail(
          `the token endpoint answered ${cause.status} without an OAuth error`,
          RETRYABLE_STATUS.has(cause.status),
          { status: cause.status },
        );
      }
      if (
        err instanceof oauth.OperationProcessingError ||
        err instanceof oauth.UnsupportedOperationError
      ) {
        throw fail(`the token endpoint's answer is not usable: ${err.message}`, false);
      }
      throw fail(`the token endpoint could not be reached: ${(err as Error).message}`, true, {
        oauth_error: 'unreachable',
      });
    }
    reveal(got.access_token);
    if (got.token_type !== 'bearer') {
      throw fail(
        `the token endpoint issued a ${got.token_type} token; only bearer is supported`,
        false,
      );
    }
    if (refreshToken !== undefined && got.refresh_token && got.refresh_token !== refreshToken) {
      // Rotated (RFC 6749 6, OAuth 2.1): the old one is spent, so the new one is stored before
      // anything else can fail.
      reveal(got.refresh_token);
      const name = auth.refresh_token_secret!;
      await locked.putSecret(name, deps.box.seal(project, name, got.refresh_token));
      log.info({ project, secret: name }, 'stored the rotated OAuth refresh token');
    }
    const expiresIn =
      typeof got.expires_in === 'number' && got.expires_in > 0 ? got.expires_in : null;
    log.info(
      { project, grant: auth.grant, expires_in: expiresIn },
      'fetched an OAuth access token',
    );
    return { token: got.access_token, expiresIn };
  }

  /** The shared fetch: Postgres row first, then the lock, then the token endpoint. */
  async function obtain(
    project: string,
    auth: OAuth2Auth,
    cacheKey: string,
    rejected: string | undefined,
    reveal: (v: string) => void,
  ): Promise<Held> {
    const row = await deps.store.oauthTokens.get(project, cacheKey);
    if (row) {
      const h = heldOf(project, cacheKey, row);
      if (rejected === undefined ? fresh(h) : h.token !== rejected && alive(h)) return h;
    }
    const seen = row?.version ?? 0;
    const lockKey =
      auth.grant === 'refresh_token' ? `refresh:${auth.refresh_token_secret!}` : cacheKey;
    try {
      return await deps.store.oauthTokens.withLock(
        project,
        lockKey,
        deps.timeoutMs,
        async (locked) => {
          const cur = await locked.get(cacheKey);
          if (cur) {
            const h = heldOf(project, cacheKey, cur);
            // Another instance fetched while this one waited: its token, even if short-lived.
            const replaced = cur.version !== seen && alive(h);
            if (h.token !== rejected && (replaced || (rejected === undefined && fresh(h))))
              return h;
          }
          const got = await request(project, auth, locked, reveal);
          const saved = await locked.put(
            cacheKey,
            deps.box.seal(project, sealName(cacheKey), got.token),
            got.expiresIn,
          );
          return {
            token: got.token,
            expiresAt: saved.remaining_ms === null ? undefined : Date.now() + saved.remaining_ms,
          };
        },
      );
    } catch (err) {
      // lock_not_available: another instance has been fetching for longer than allowed.
      if ((err as { code?: unknown }).code === '55P03') {
        throw new RetryableError(
          `another instance held the OAuth token lock for more than ${deps.timeoutMs} ms`,
          { cause: err },
        );
      }
      throw err;
    }
  }

  return {
    token: async (project, auth, o = {}) => {
      const reveal = o.reveal ?? (() => undefined);
      const cacheKey = cacheKeyOf(auth);
      const k = `${project}/${cacheKey}`;
      const rejected = o.rejected;
      const usable = (h: Held) =>
        rejected === undefined ? fresh(h) : h.token !== rejected && alive(h);
      const mine = held.get(k);
      if (mine && usable(mine)) {
        reveal(mine.token);
        return mine.token;
      }
      if (rejected !== undefined && mine?.token === rejected) held.delete(k);
      const pending = inflight.get(k);
      if (pending) {
        const h = await untilAborted(pending, o.signal);
        // Fetched for this caller's sake just now: used even when it is short-lived.
        if (rejected === undefined || (h.token !== rejected && alive(h))) {
          reveal(h.token);
          return h.token;
        }
      }
      const p = obtain(project, auth, cacheKey, rejected, reveal).then((h) => remember(k, h));
      inflight.set(k, p);
      const clear = () => {
        if (inflight.get(k) === p) inflight.delete(k);
      };
      void p.then(clear, clear);
      const h = await untilAborted(p, o.signal);
      reveal(h.token);
      return h.token;
    },
  };
}

/** The ToolError a fetch wrapper threw, found in an error's cause chain (the SDK wraps it). */
export function toolErrorIn(err: unknown): ToolError | undefined {
  for (let e = err, depth = 0; e && depth < 6; depth++) {
    if (e instanceof ToolError) return e;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}
