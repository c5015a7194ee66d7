// The entry of an OpenAPI import's worker thread (run.ts starts one per import): prepares the
// import from workerData and posts the outcome once. An ApiError crosses as its code, status,
// message and details; a stack overflow (a document whose references or nesting are too deep to
// walk, past the checks of measure.ts) as openapi_expansion_limit; anything else as a crash.
import { parentPort, workerData } from 'node:worker_threads';
import { ApiError } from '../errors.ts';
import { prepareImport } from './prepare.ts';
import type { ImportJob, WorkerReply } from './run.ts';

const job = workerData as ImportJob;
let reply: WorkerReply;
try {
  reply = { ok: true, prepared: await prepareImport(job.document, job.options, job.limits) };
} catch (err) {
  if (err instanceof ApiError) {
    reply = {
      ok: false,
      error: {
        code: err.code,
        status: err.status,
        message: err.message,
        ...(err.details ? { details: err.details } : {}),
      },
    };
  } else if (err instanceof RangeError) {
    reply = {
      ok: false,
      error: {
        code: 'openapi_expansion_limit',
        status: 422,
        message: `the document is too deeply nested or referenced to read: ${err.message}`,
      },
    };
  } else {
    reply = { ok: false, crash: err instanceof Error ? (err.stack ?? err.message) : String(err) };
  }
}
parentPort?.postMessage(reply);
