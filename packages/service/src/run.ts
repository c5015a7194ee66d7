// What every process's main.ts does the same way: parse the configuration once (a bad one exits
// 2 with the file, line and key), build a pino logger with buffered writes, start the service,
// and stop it cleanly on SIGTERM or SIGINT (exit 0 once stopped, 1 if stopping failed or took
// longer than [service] stop_timeout_ms: a supervisor must never wait on a hung stop). Every
// line the logger writes is redacted: URL credentials and the configuration's secrets (keys,
// passwords) are masked wherever they appear, in messages, fields, bindings and errors, since a
// driver or a library may quote them in an error message.
import {
  ConfigError,
  createRedactor,
  loadConfig,
  redactConfig,
  secretsOf,
  type Config,
  type Env,
  type Redactor,
} from '@toolmesh/config';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { isReportedOutage } from '@toolmesh/store';
import { collectProcessMetrics, initTracing } from '@toolmesh/telemetry';
import { instanceIdOf } from './connect.ts';

export interface Running {
  stop(): Promise<void>;
}

export interface RunOptions {
  /** The service name in every log line and in error messages. */
  name: string;
  env: Env;
  start(config: Config, logger: Logger): Promise<Running>;
}

export async function runService(opts: RunOptions): Promise<void> {
  let config: Config;
  try {
    config = loadConfig({ env: opts.env });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${opts.name}: ${err.message}\n`);
    process.exit(2);
  }
  // Buffered asynchronous writes: one log line per call must not cost one write syscall each;
  // the buffer is flushed at least once a second so a quiet service's lines are not held back.
  const logger = createServiceLogger(
    opts.name,
    config,
    pino.destination({ sync: false, minLength: 4096 }),
  );
  setInterval(() => logger.flush(), 1_000).unref();
  // The whole configuration (4-5 KB) is for debugging, not for every start's output.
  logger.info('starting');
  logger.debug({ config: redactConfig(config) }, 'configuration');
  // Traces are exported only when [otel] endpoint is set; metrics are always served.
  const tracing = await initTracing({
    serviceName: opts.name,
    instanceId: instanceIdOf(config),
    endpoint: config.otel.endpoint,
    sampleRatio: config.otel.sample_ratio,
  });
  collectProcessMetrics();

  let running: Running;
  try {
    running = await opts.start(config, logger);
    logger.flush();
  } catch (err) {
    logger.fatal({ err }, 'failed to start');
    logger.flush();
    process.exit(1);
  }

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    const timeoutMs = config.service.stop_timeout_ms;
    logger.info({ signal, timeout_ms: timeoutMs }, 'stopping: finishing work in flight');
    // Kept referenced: a stop stuck on a promise nothing will settle must not let the process
    // drift out with exit 0 once its event loop runs dry.
    setTimeout(() => {
      logger.error(
        { timeout_ms: timeoutMs },
        'stop did not finish within service.stop_timeout_ms; exiting anyway',
      );
      logger.flush();
      process.exit(1);
    }, timeoutMs);
    running
      .stop()
      .then(() => tracing.shutdown())
      .then(
        () => {
          logger.info('stopped');
          logger.flush();
          process.exit(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'stop failed');
          logger.flush();
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

/**
 * The pino options that redact every line: the serialized JSON is redacted just before it is
 * written, so messages, fields, child bindings and errors (with their causes) are all covered,
 * whatever path they took into the line. A URL ends at a quote, so JSON stays JSON.
 */
export function redactingLoggerOptions(redactor: Redactor): LoggerOptions {
  return {
    hooks: {
      streamWrite: (line) => redactor.text(line),
      // A Postgres outage is told once by the pool (and its end): the warning each loop and
      // each call would write about it, with a stack trace, is a debug line instead.
      logMethod(args, method, level) {
        const first = args[0] as { err?: unknown } | undefined;
        if (level >= 40 && typeof first === 'object' && isReportedOutage(first?.err)) {
          if (this.isLevelEnabled('debug')) this.debug(...(args as [object, string]));
          return;
        }
        method.apply(this, args);
      },
    },
  };
}

/** The logger of a service: its level and name from the configuration, every line redacted. */
export function createServiceLogger(
  name: string,
  config: Config,
  destination: DestinationStream,
): Logger {
  const redactor = createRedactor(secretsOf(config));
  return pino(
    {
      level: config.log.level,
      base: { service: name },
      ...redactingLoggerOptions(redactor),
    },
    destination,
  );
}
