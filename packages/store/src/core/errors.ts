// The one boundary where Postgres errors become mesh errors: a server that is down, restarting
// or out of connections is retryable; anything else (a bug, a constraint) is not.
import { MeshError, RetryableError } from '@toolmesh/protocol';

const RETRYABLE_SQLSTATE_CLASSES = ['08', '53', '57', '40'];
const RETRYABLE_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

export function isRetryablePgError(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const code = 'code' in err && typeof err.code === 'string' ? err.code : '';
  if (RETRYABLE_NODE_CODES.has(code)) return true;
  if (/^[0-9A-Z]{5}$/.test(code) && RETRYABLE_SQLSTATE_CLASSES.includes(code.slice(0, 2)))
    return true;
  const message = err instanceof Error ? err.message : '';
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    message,
  );
}

export function toStoreError(err: unknown, what: string): Error {
  if (err instanceof MeshError) return err;
  if (isRetryablePgError(err)) {
    return new RetryableError(`${what}: Postgres unavailable: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return err instanceof Error ? err : new Error(`${what}: ${String(err)}`);
}
