// Runs an OpenAPI import's preparation (prepare.ts) in a worker thread of its own, with a
// deadline and a heap limit: the api's event loop only sends the request's raw bytes and receives
// the tools (JSON and YAML parsing, every check and the conversion run in the worker). Past the deadline the worker is terminated (V8 stops it mid-work) and the import is
// refused with openapi_time_limit; past the heap, openapi_memory_limit. A fresh worker per import
// costs its start-up (its modules' loading, on the worker's thread, before the deadline starts)
// and leaves nothing behind: a document
// that made one import slow cannot slow the next. At most `maxConcurrent` run at once per
// instance, so a burst of imports cannot take every core.
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { metrics } from '@toolmesh/telemetry';
import { ApiError } from '../errors.ts';
import type { ImportRequest } from './body.ts';
import type { PrepareLimits, Prepared } from './prepare.ts';

export interface ImportJob {
  /** The request body as it arrived (JSON: the envelope with the document inside). */
  body: Uint8Array;
  limits: PrepareLimits;
}

export interface ImportOutcome {
  request: ImportRequest;
  prepared: Prepared;
}

export type WorkerReply =
  | { started: true }
  | ({ ok: true } & ImportOutcome)
  | {
      ok: false;
      error: { code: string; status: number; message: string; details?: Record<string, unknown> };
    }
  | { ok: false; crash: string };

export interface ImportRunnerOptions {
  limits: PrepareLimits;
  /** api.openapi_timeout_ms. */
  timeoutMs: number;
  /** api.openapi_max_heap_mb. */
  maxHeapMb: number;
  /** api.openapi_max_concurrent. */
  maxConcurrent: number;
  logger: Logger;
}

export interface ImportRunner {
  /**
   * The request read and the import prepared from the raw body, or an ApiError: the 400 of a bad
   * body, or the limit the document went past.
   */
  prepare(body: Uint8Array): Promise<ImportOutcome>;
}

const WORKER = new URL('./worker.ts', import.meta.url);
/**
 * The time a worker may take to load its modules before its deadline starts: loading costs
 * the same for every document (hundreds of ms, seconds on a busy machine) and is no document's
 * doing, so it is not counted against api.openapi_timeout_ms.
 */
const STARTUP_MS = 30_000;

/** Codes of the refusals that are a budget of the import (counted by metric). */
const BUDGET_CODES = new Set([
  'nesting_too_deep',
  'openapi_operations_limit',
  'openapi_expansion_limit',
  'openapi_time_limit',
  'openapi_memory_limit',
  'openapi_busy',
]);

export function createImportRunner(o: ImportRunnerOptions): ImportRunner {
  let running = 0;

  function runWorker(job: ImportJob): Promise<ImportOutcome> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const worker = new Worker(WORKER, {
        workerData: job,
        // The api's own flags (an OpenTelemetry preload, say) are not the import's business.
        execArgv: [],
        resourceLimits: {
          maxOldGenerationSizeMb: o.maxHeapMb,
          maxYoungGenerationSizeMb: Math.max(4, Math.min(64, Math.floor(o.maxHeapMb / 4))),
        },
      });
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        fn();
        void worker.terminate();
      };
      const deadline = () =>
        settle(() =>
          reject(
            new ApiError(
              'openapi_time_limit',
              `reading and converting the document took longer than api.openapi_timeout_ms (${o.timeoutMs} ms): it was stopped`,
              { limit_ms: o.timeoutMs },
            ),
          ),
        );
      let timer = setTimeout(() => {
        settle(() =>
          reject(new Error(`the OpenAPI import worker did not start in ${STARTUP_MS} ms`)),
        );
      }, STARTUP_MS);
      worker.on('message', (reply: WorkerReply) => {
        if ('started' in reply) {
          clearTimeout(timer);
          timer = setTimeout(deadline, o.timeoutMs);
          return;
        }
        settle(() => {
          if (reply.ok) return resolve({ request: reply.request, prepared: reply.prepared });
          if ('error' in reply) {
            const e = reply.error;
            return reject(new ApiError({ code: e.code, status: e.status }, e.message, e.details));
          }
          reject(new Error(`the OpenAPI import worker crashed: ${reply.crash}`));
        });
      });
      worker.once('error', (err: Error & { code?: string }) =>
        settle(() => {
          if (err.code === 'ERR_WORKER_OUT_OF_MEMORY') {
            return reject(
              new ApiError(
                'openapi_memory_limit',
                `reading and converting the document needed more than api.openapi_max_heap_mb (${o.maxHeapMb} MiB): it was stopped`,
                { limit_mb: o.maxHeapMb },
              ),
            );
          }
          reject(err);
        }),
      );
      worker.once('exit', (code) =>
        settle(() => reject(new Error(`the OpenAPI import worker exited with code ${code}`))),
      );
    });
  }

  return {
    prepare: async (body) => {
      if (running >= o.maxConcurrent) {
        metrics.openapiImportsRefused.inc({ code: 'openapi_busy' });
        throw new ApiError(
          'openapi_busy',
          `${o.maxConcurrent} OpenAPI imports are running on this api instance (api.openapi_max_concurrent): retry in a moment`,
          { retry_after_sec: 1, limit: o.maxConcurrent },
        );
      }
      running++;
      metrics.openapiImportsRunning.inc();
      const started = performance.now();
      try {
        return await runWorker({ body, limits: o.limits });
      } catch (err) {
        if (err instanceof ApiError && BUDGET_CODES.has(err.code)) {
          metrics.openapiImportsRefused.inc({ code: err.code });
          o.logger.info({ code: err.code, reason: err.message }, 'OpenAPI import refused');
        }
        throw err;
      } finally {
        running--;
        metrics.openapiImportsRunning.dec();
        o.logger.debug(
          { duration_ms: Math.round(performance.now() - started) },
          'OpenAPI import prepared',
        );
      }
    },
  };
}
