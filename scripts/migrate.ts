// `pnpm migrate`: creates the configured database when it does not exist yet, then applies the
// SQL migrations of packages/store. Logs pino JSON; exits 0 on success and 1 with the reason on
// failure, so deploy scripts and CI can run it before starting the services.
import { createRedactor, loadConfig, secretsOf } from '@toolmesh/config';
import type { Config } from '@toolmesh/config';
import { redactingLoggerOptions } from '@toolmesh/service';
import { createPool, ensureDatabase, migrate } from '@toolmesh/store';
import { pino } from 'pino';

async function main(): Promise<number> {
  let config: Config;
  try {
    config = loadConfig({ env: process.env });
  } catch (err) {
    pino().fatal({ err }, `migrate: invalid configuration: ${reason(err)}`);
    return 1;
  }
  const { url, pool_max, statement_timeout_ms, connect_timeout_ms } = config.postgres;
  // Every line names the target; never the URL itself, which may carry a password (and every
  // line is redacted besides, as the services' are: a driver error may quote it).
  const target = describeTarget(url);
  const logger = pino({
    level: config.log.level,
    name: 'toolmesh-migrate',
    ...redactingLoggerOptions(createRedactor(secretsOf(config))),
  }).child({ target });
  try {
    await ensureDatabase({ url, connectTimeoutMs: connect_timeout_ms, logger });
    const pool = createPool({
      url,
      max: Math.min(pool_max, 2),
      statementTimeoutMs: statement_timeout_ms,
      connectTimeoutMs: connect_timeout_ms,
      applicationName: 'toolmesh-migrate',
      logger,
    });
    try {
      await migrate({ pool, logger });
    } finally {
      await pool.end();
    }
    return 0;
  } catch (err) {
    logger.fatal({ err }, `migrate failed on ${target}: ${reason(err)}`);
    return 1;
  }
}

/** `host:port/database`, the URL without its credentials and parameters. */
function describeTarget(url: string): string {
  try {
    const u = new URL(url);
    return `${u.host}${decodeURIComponent(u.pathname)}`;
  } catch {
    return '(unparsable URL)';
  }
}

// Connecting to a name with several addresses (localhost: ::1 and 127.0.0.1) fails with an
// AggregateError whose own message is empty; the reasons are inside it.
function reason(err: unknown): string {
  if (err instanceof AggregateError && err.message === '') {
    return err.errors.map((e) => reason(e)).join('; ');
  }
  return err instanceof Error ? err.message : String(err);
}

process.exitCode = await main();
