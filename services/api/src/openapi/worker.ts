// The entry of an OpenAPI import's worker thread (run.ts starts one per import): reads the raw
// request body (body.ts) and prepares the import from it and posts the outcome once. An ApiError crosses as its code, status,
// message and details; a stack overflow (a document whose references or nesting are too deep to
// walk, past the checks of measure.ts) as openapi_expansion_limit; anything else as a crash.
import { parentPort, workerData } from 'node:worker_threads';
import { ApiError } from '../errors.ts';
import { assertRegistrable } from '../routes/tools-schema.ts';
import { readImportBody } from './body.ts';
import { prepareImport } from './prepare.ts';
import type { ImportJob, WorkerReply } from './run.ts';

const job = workerData as ImportJob;
// The modules above are loaded: the import's deadline starts now (run.ts).
parentPort?.postMessage({ started: true } satisfies WorkerReply);
let reply: WorkerReply;
try {
  const { document, ...request } = readImportBody(job.body, job.limits.maxDepth);
  assertRegistrable(`${request.prefix}.x`);
  const prepared = prepareImport(
    document,
    {
      prefix: request.prefix,
      baseUrl: request.base_url,
      security: request.security,
      include: request.include,
      exclude: request.exclude,
      category: request.category,
      tags: request.tags,
    },
    job.limits,
  );
  reply = { ok: true, request, prepared };
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
