// Cached upstream OAuth access tokens (state.oauth_tokens), shared by every tools-service
// instance. Rows hold sealed tokens only (the SecretBox of secrets.ts seals and opens them, under
// the same key and scheme as project secrets). Fetching a new token happens under a transaction
// -scoped advisory lock per (project, lock key), so that of several instances that find the
// token stale at once, one asks the token endpoint and the others wait and then read its token.
import type { Db } from '../core/db.ts';
import { createSecretsRepo, type SealedSecret } from './secrets.ts';

export interface OAuthTokenRow {
  sealed: SealedSecret;
  /** Milliseconds the token has left by the database's clock; null when it has no expiry. */
  remaining_ms: number | null;
  /** Goes up with every write of the row. */
  version: number;
}

/**
 * What a holder of the fetch lock may do. Everything runs on the lock's own connection: a
 * holder that needed a second one from the pool could starve it while other holders wait.
 */
export interface LockedOAuthTokens {
  get(cacheKey: string): Promise<OAuthTokenRow | undefined>;
  /** A sealed project secret (the credentials of the token request). */
  secret(name: string): Promise<SealedSecret | undefined>;
  /** Replaces a project secret (a rotated refresh token). */
  putSecret(name: string, sealed: SealedSecret): Promise<void>;
  /** Stores a token that expires in `expiresInSec` (null: no expiry known). */
  put(cacheKey: string, sealed: SealedSecret, expiresInSec: number | null): Promise<OAuthTokenRow>;
}

export interface OAuthTokensRepo {
  get(projectId: string, cacheKey: string): Promise<OAuthTokenRow | undefined>;
  /**
   * Runs `fn` in one transaction holding the advisory lock of (project, lockKey); waits at most
   * `lockTimeoutMs` for it (then throws the lock_not_available error, SQLSTATE 55P03).
   */
  withLock<T>(
    projectId: string,
    lockKey: string,
    lockTimeoutMs: number,
    fn: (locked: LockedOAuthTokens) => Promise<T>,
  ): Promise<T>;
}

interface RawRow {
  ciphertext: Buffer;
  iv: Buffer;
  tag: Buffer;
  remaining_ms: number | null;
  version: string;
}

const SELECT = `SELECT ciphertext, iv, tag, version,
                       (extract(epoch FROM expires_at - now()) * 1000)::float8 AS remaining_ms
                FROM state.oauth_tokens WHERE project_id = $1 AND cache_key = $2`;

const rowOf = (r: RawRow | undefined): OAuthTokenRow | undefined =>
  r && {
    sealed: { ciphertext: r.ciphertext, iv: r.iv, tag: r.tag },
    remaining_ms: r.remaining_ms,
    version: Number(r.version),
  };

export function createOAuthTokensRepo(db: Db): OAuthTokensRepo {
  const get = async (q: Db, projectId: string, cacheKey: string) =>
    rowOf((await q.query<RawRow>('oauth_tokens_get', SELECT, [projectId, cacheKey]))[0]);
  return {
    get: (projectId, cacheKey) => get(db, projectId, cacheKey),
    withLock: (projectId, lockKey, lockTimeoutMs, fn) =>
      db.tx(async (tx) => {
        await tx.query('oauth_tokens_lock_timeout', `SELECT set_config('lock_timeout', $1, true)`, [
          `${Math.max(1, Math.round(lockTimeoutMs))}ms`,
        ]);
        await tx.query(
          'oauth_tokens_lock',
          'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))',
          [`oauth/${projectId}/${lockKey}`],
        );
        const secrets = createSecretsRepo(tx);
        return fn({
          get: (cacheKey) => get(tx, projectId, cacheKey),
          secret: (name) => secrets.get(projectId, name),
          putSecret: async (name, sealed) => {
            await secrets.put(projectId, name, sealed);
          },
          put: async (cacheKey, s, expiresInSec) =>
            rowOf(
              (
                await tx.query<RawRow>(
                  'oauth_tokens_put',
                  `INSERT INTO state.oauth_tokens
                     (project_id, cache_key, ciphertext, iv, tag, expires_at)
                   VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6::float8))
                   ON CONFLICT (project_id, cache_key) DO UPDATE
                     SET ciphertext = EXCLUDED.ciphertext, iv = EXCLUDED.iv, tag = EXCLUDED.tag,
                         expires_at = EXCLUDED.expires_at, fetched_at = now(),
                         version = state.oauth_tokens.version + 1
                   RETURNING ciphertext, iv, tag, version,
                     (extract(epoch FROM expires_at - now()) * 1000)::float8 AS remaining_ms`,
                  [projectId, cacheKey, s.ciphertext, s.iv, s.tag, expiresInSec],
                )
              )[0],
            )!,
        });
      }),
  };
}
