// The skills service process: load the configuration, start, stop cleanly on SIGTERM/SIGINT.
import { pino } from 'pino';
import { ConfigError, loadConfig, redactConfig, type Config } from '@toolmesh/config';
import { startSkillsService } from './app.ts';

let config: Config;
try {
  config = loadConfig({ env: process.env });
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  process.stderr.write(`skills: ${err.message}\n`);
  process.exit(2);
}
// Buffered asynchronous writes: one log line per call must not cost one write syscall each.
const logger = pino(
  { level: config.log.level, base: { service: 'skills' } },
  pino.destination({ sync: false, minLength: 4096 }),
);
// The buffer is flushed at least once a second, so a quiet service's lines are not held back.
setInterval(() => logger.flush(), 1_000).unref();
logger.info({ config: redactConfig(config) }, 'starting');

try {
  const service = await startSkillsService(config, logger);
  logger.flush();
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: finishing calls in flight');
    service.stop().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
} catch (err) {
  logger.fatal({ err }, 'failed to start');
  process.exit(1);
}
